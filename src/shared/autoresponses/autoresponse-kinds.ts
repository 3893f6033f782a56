// The autoresponse feature's words that other features' tables hold: what became of a submission's
// autoresponse. A module of its own, importing nothing, so that the submissions table can name them
// without importing this feature's entities (which refer to it).

/**
 * What became of a submission's autoresponse (the confirmation email to the visitor). `pending`: its
 * email is queued; `sent`, `failed`, `suppressed`: what its own delivery came to; the others say why
 * none was sent: the key's autoresponse is `off`, the key's mailbox has `not_confirmed` it wants
 * mail, the spam check's verdict was `spam` or `unchecked` or the key's filter is off
 * (`filter_off`), the visitor's address is `suppressed` or a `role_address`, or a bound was reached
 * (`limit_key`: one per address per key per 24 h; `limit_address`: 3 per address across keys).
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
] as const;
export type AutoresponseOutcome = (typeof AUTORESPONSE_OUTCOMES)[number];
