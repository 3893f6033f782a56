// The spam filter's word on each owner's autoresponse text, remembered for a while by this worker:
// the text is the same for every visitor of a key, and a key sends at most its daily bound, so one
// check per text per TTL is enough, and a busy key costs the filter almost nothing.
import { createHash } from 'node:crypto';
import { spamRefusal, type AutoresponseText, type TextRefusal } from '../../shared/autoresponses/text-check.ts';
import type { SpamFilter } from '../../shared/spam/spam-filter.ts';

/** How long a verdict stands: a text the shared statistics learn to call spam stops within this. */
const VERDICT_TTL_MS = 10 * 60 * 1000;
/** Texts remembered at most; past it the memory starts afresh. */
const MAX_VERDICTS = 1_000;

export type AutoresponseTextVerdicts = {
  /** The refusal of this text, or undefined when it may go; throws when the filter does not answer. */
  refusal: (text: AutoresponseText) => Promise<TextRefusal | undefined>;
};

export function createAutoresponseTextVerdicts(
  filter: SpamFilter | undefined,
  settings: { mailFrom: string; threshold: number; timeoutMs: number },
): AutoresponseTextVerdicts {
  const verdicts = new Map<string, { refusal: TextRefusal | undefined; expiresAt: number }>();
  return {
    async refusal(text) {
      // Without a filter now, none decided the submission's `ham` either: nothing to ask.
      if (!filter) return undefined;
      const id = createHash('sha256')
        .update(JSON.stringify([text.ownerMailbox, text.subject, text.text]))
        .digest('base64url');
      const known = verdicts.get(id);
      if (known && known.expiresAt > Date.now()) return known.refusal;
      const refusal = await spamRefusal(filter, text, settings);
      if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
      verdicts.set(id, { refusal, expiresAt: Date.now() + VERDICT_TTL_MS });
      return refusal;
    },
  };
}
