// Which visitor addresses an autoresponse may go to, by their form. The address goes into the
// email's To header and envelope, so whoever typed it chooses those words: a +tag or a long local
// part ("x+Account.suspended.call.0800-555-0100@…") would carry a visitor's text to the recipient's
// screen under this service's name. A person's address rarely needs either. No I/O.

/** The longest local part an autoresponse goes to: a long name ("firstname.lastname") fits. */
export const AUTORESPONSE_LOCAL_PART_MAX = 32;
/** Separators (`.`, `-`, `_`) a local part may have: "ana.maria.de-souza" has three. */
export const AUTORESPONSE_LOCAL_PART_SEPARATORS_MAX = 3;

/** Letters and digits in runs joined by single separators: no tag, quote, space, or other sign. */
const PLAIN_LOCAL_PART = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/i;

/** Whether the address is one an autoresponse may carry in its headers: a plain, short local part (see above). */
export function isPlainAddress(email: string): boolean {
  const at = email.lastIndexOf('@');
  if (at <= 0) return false;
  const local = email.slice(0, at);
  if (local.length > AUTORESPONSE_LOCAL_PART_MAX || !PLAIN_LOCAL_PART.test(local)) return false;
  return (local.match(/[._-]/g)?.length ?? 0) <= AUTORESPONSE_LOCAL_PART_SEPARATORS_MAX;
}
