// How many autoresponses a key, and all keys of one owner, may send in 24 hours. Anyone can ask for
// a key, so an owner is a stranger too: a new key sends few, and earns more with age, as a new
// sending domain warms up. No I/O.

export type DailyBoundSettings = {
  /** A key's bound in its first week (AUTORESPONSES_NEW_KEY_PER_DAY). */
  newKeyPerDay: number;
  /** The most a key sends, however old (AUTORESPONSES_KEY_PER_DAY). */
  keyPerDay: number;
};

const DAY_MS = 24 * 3600 * 1000;
const WEEK_DAYS = 7;
/** An owner's keys together: twice their oldest key's bound, so that ten new keys are not ten times one. */
export const OWNER_BOUND_FACTOR = 2;

/** The bound of a key created at `createdAt`: doubling each full week of its age, up to the most; the most at once for a key the operator approved. */
export function keyDailyBound(createdAt: Date, now: Date, approved: boolean, settings: DailyBoundSettings): number {
  if (approved) return settings.keyPerDay;
  const weeks = Math.max(0, Math.floor((now.getTime() - createdAt.getTime()) / DAY_MS / WEEK_DAYS));
  // 2 ** weeks past ~50 weeks is only larger; Math.min caps it all the same.
  return Math.min(settings.keyPerDay, settings.newKeyPerDay * 2 ** Math.min(weeks, 30));
}

/**
 * The bound of all keys of one owner mailbox together, as one of them decides: from the age of its
 * oldest key, or the most when the deciding key is one the operator approved (the operator vouched
 * for that key, not for the owner's others).
 */
export function ownerDailyBound(oldestKeyCreatedAt: Date, now: Date, approvedKey: boolean, settings: DailyBoundSettings): number {
  return OWNER_BOUND_FACTOR * keyDailyBound(oldestKeyCreatedAt, now, approvedKey, settings);
}
