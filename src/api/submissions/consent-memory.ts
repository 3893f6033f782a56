// What this API process has learnt about unconfirmed mailboxes, so that a mailbox past its hourly
// allowance costs no transaction per submission. Without it every submission to such a mailbox
// upserted the same allowance row and the same recipients row, and their row locks serialised all
// of them, far below the confirmed path's rate (docs/benchmarks.md).
//
// Both facts only ever become true, so remembering them is safe: an allowance spent in a clock hour
// stays spent until the hour ends (the allowance itself is still taken in PostgreSQL, atomically,
// so the figure stays exact with any number of API processes), and a mailbox asked to confirm has
// been asked for good. A confirmation shows as `mailboxConfirmed` on the key, which is checked first.
// The hour ends by this machine's clock; one that lags PostgreSQL's holds a few more submissions at
// the turn of the hour, never sends more.

/** Mailboxes remembered at most, per fact; the oldest is forgotten first (and asked about again). */
const MAX_MAILBOXES = 100_000;

export type ConsentMemory = {
  /** True while this clock hour's allowance of the mailbox is known to be spent and it was asked to confirm. */
  knownHeld(mailbox: string): boolean;
  /** Records that a submission to the mailbox was held: its allowance is spent, the confirm email claimed. */
  rememberHeld(mailbox: string): void;
};

export function createConsentMemory(now: () => number = Date.now): ConsentMemory {
  /** Mailbox → end of the clock hour (ms) until which its allowance is spent. */
  const spentUntil = new Map<string, number>();
  const remember = (mailbox: string, until: number) => {
    spentUntil.delete(mailbox);
    if (spentUntil.size >= MAX_MAILBOXES) spentUntil.delete(spentUntil.keys().next().value!);
    spentUntil.set(mailbox, until);
  };
  return {
    knownHeld(mailbox) {
      const until = spentUntil.get(mailbox);
      if (until === undefined) return false;
      if (now() < until) return true;
      spentUntil.delete(mailbox);
      return false;
    },
    rememberHeld(mailbox) {
      const hour = 3_600_000;
      remember(mailbox, Math.floor(now() / hour) * hour + hour);
    },
  };
}
