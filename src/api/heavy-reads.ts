// Bounds on the reads that cost PostgreSQL and this process the most, counted in this API process:
// an owner session's searches and CSV downloads at a time, and all downloads at a time whoever asks
// (SECURITY.md). Past a bound the request is answered 429 with Retry-After at once, before it
// reads anything, so that one owner cannot take the connections every other request needs.
import type { AppDeps } from './context.ts';
import { errors } from './api-errors.ts';

/** A search takes a fraction of a second: the owner may try again soon. */
const SEARCH_RETRY_AFTER_SECONDS = 2;
/** A download of a large key takes about a minute. */
const EXPORT_RETRY_AFTER_SECONDS = 30;

/** Holders of at most `perHolder` slots each, and at most `total` together. */
class Slots {
  readonly #held = new Map<string, number>();
  #total = 0;
  readonly perHolder: number;
  readonly total: number;
  constructor(perHolder: number, total = Number.POSITIVE_INFINITY) {
    this.perHolder = perHolder;
    this.total = total;
  }

  /** A slot for `holder` (undefined: counted in the total only) and its release (safe to call twice), or undefined when a bound is reached. */
  take(holder: string | undefined): (() => void) | undefined {
    const held = holder === undefined ? 0 : (this.#held.get(holder) ?? 0);
    if (held >= this.perHolder || this.#total >= this.total) return undefined;
    if (holder !== undefined) this.#held.set(holder, held + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      if (holder === undefined) return;
      const left = (this.#held.get(holder) ?? 1) - 1;
      if (left > 0) this.#held.set(holder, left);
      else this.#held.delete(holder);
    };
  }
}

type HeavyReads = { searches: Slots; exports: Slots };

// One set per API process (its deps): tests run several in one Node process.
const perProcess = new WeakMap<AppDeps['config'], HeavyReads>();

function heavyReadsOf(deps: Pick<AppDeps, 'config'>): HeavyReads {
  let reads = perProcess.get(deps.config);
  if (!reads) {
    reads = {
      searches: new Slots(deps.config.OWNER_SEARCHES_PER_SESSION),
      exports: new Slots(deps.config.OWNER_EXPORTS_PER_SESSION, deps.config.EXPORTS_PER_PROCESS),
    };
    perProcess.set(deps.config, reads);
  }
  return reads;
}

/** A search slot of the session; 429 when the session runs as many as it may. */
export function takeSearch(deps: Pick<AppDeps, 'config'>, sessionId: string): () => void {
  const release = heavyReadsOf(deps).searches.take(sessionId);
  if (!release) throw errors.rateLimited(SEARCH_RETRY_AFTER_SECONDS);
  return release;
}

/** A download slot of the session (`undefined`: the operator's `/admin` export, bounded by the process's total only); 429 past a bound. */
export function takeExport(deps: Pick<AppDeps, 'config'>, sessionId: string | undefined): () => void {
  const release = heavyReadsOf(deps).exports.take(sessionId);
  if (!release) throw errors.rateLimited(EXPORT_RETRY_AFTER_SECONDS);
  return release;
}
