// The autoresponse feature's words that other features' tables hold: what became of a submission's
// autoresponse. A module of its own, importing nothing, so that the submissions table can name them
// without importing this feature's entities (which refer to it).

/**
 * What became of a submission's autoresponse (the confirmation email to the visitor). `pending`: its
 * email is queued; `sent`, `failed`, `suppressed`: what its own delivery came to; the others say why
 * none was sent: the key's autoresponse is `off`; the operator turned autoresponses off for the
 * service or the key (`operator_off`) or has `not_approved` the key's; the key's mailbox has
 * `not_confirmed` it wants mail; the key asks no captcha of its forms (`no_captcha`); the spam
 * check's verdict was `spam` or `unchecked` or the key's filter is off (`filter_off`); the visitor's
 * address is `suppressed`, a `role_address` or an `unusual_address` (a tag, or a local part that
 * could carry words); the owner's text failed its check as mail (`text_refused`); or a bound was
 * reached (`limit_key`: one per address per key per 24 h; `limit_address`: 3 per address across
 * keys; `limit_key_day` and `limit_owner_day`: the key's and the owner's own per 24 h).
 * Null until the owner's own email is decided.
 */
export const AUTORESPONSE_OUTCOMES = [
  'pending',
  'sent',
  'failed',
  'off',
  'not_confirmed',
  'spam',
  'unchecked',
  'filter_off',
  'suppressed',
  'role_address',
  'limit_key',
  'limit_address',
  'operator_off',
  'not_approved',
  'no_captcha',
  'unusual_address',
  'text_refused',
  'limit_key_day',
  'limit_owner_day',
] as const;

/** The operator's review of a key's autoresponse (admin API): null until reviewed. */
export const AUTORESPONSE_REVIEWS = ['approved', 'blocked'] as const;
export type AutoresponseReview = (typeof AUTORESPONSE_REVIEWS)[number];

/** Whether the service sends autoresponses (`AUTORESPONSES`): to every key, only to keys the operator approved, or to none. */
export const AUTORESPONSE_MODES = ['on', 'approval', 'off'] as const;
export type AutoresponseMode = (typeof AUTORESPONSE_MODES)[number];
export type AutoresponseOutcome = (typeof AUTORESPONSE_OUTCOMES)[number];
