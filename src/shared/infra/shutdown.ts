// Ordered shutdown: resources are closed in the reverse order of their registration,
// so a server stops taking requests before the clients it uses are closed.
import type { Logger } from './log.ts';

/** Signals closer together than this are one key press seen twice (see onSignals). */
export const SECOND_PRESS_AFTER_MS = 500;

/** `close` may return a promise, which is awaited. */
type Closer = { name: string; close: () => unknown };

export class Shutdown {
  private readonly closers: Closer[] = [];
  private running: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log;
  }

  /** Registers a resource to close at shutdown; returns the resource for chaining at its creation. */
  add<T>(name: string, resource: T, close: (resource: T) => unknown): T {
    this.closers.push({ name, close: () => close(resource) });
    return resource;
  }

  /** Closes everything once, last registered first, each error logged and the rest still closed. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const closer of [...this.closers].reverse()) {
        try {
          await closer.close();
          this.log.debug({ resource: closer.name }, 'closed');
        } catch (error) {
          this.log.error({ err: error, resource: closer.name }, 'close failed');
        }
      }
    })();
    return this.running;
  }

  /** Stops the process for a reason found after its start (a SECRET other than the data's): shutdown, then exit with `code`. */
  exitWith(code: number): void {
    void this.run().then(() => process.exit(code));
  }

  /**
   * Runs the shutdown on SIGINT/SIGTERM, then exits; a timeout bounds a hung close. A second
   * SIGINT (a second Ctrl+C) exits at once: jobs cut short are taken up again by the reconciler.
   */
  onSignals(timeoutMs: number): void {
    let firstAt: number | undefined;
    const handler = (signal: NodeJS.Signals) => {
      if (firstAt === undefined) {
        firstAt = Date.now();
        this.log.info({ signal }, 'shutting down');
        const timer = setTimeout(() => {
          this.log.error({ timeoutMs }, 'shutdown timed out');
          process.exit(1);
        }, timeoutMs + 5_000);
        timer.unref();
        void this.run().then(() => process.exit(0));
        return;
      }
      // One Ctrl+C can arrive twice within milliseconds (from the terminal, and passed on by npm or
      // `npm start`, which also sends a SIGTERM): only a later SIGINT is a second press.
      if (signal === 'SIGINT' && Date.now() - firstAt >= SECOND_PRESS_AFTER_MS) {
        this.log.warn('stopping at once; rows being delivered are taken up again after the claim lease');
        process.exit(1);
      }
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
    // Started by `npm start`: if that launcher dies without signalling us, shut down too.
    if (process.env.CFS_EXIT_WITH_PARENT === '1') {
      const parent = process.ppid;
      setInterval(() => process.ppid !== parent && handler('SIGTERM'), 1_000).unref();
    }
  }
}
