// The bounces feature as the rest of the service calls it: lifting an address's bounces and a
// mailbox's complaint when its owner signs in (src/shared/owners/owners.ts). Everything else of the
// feature is reached through its own modules (return-path.ts, report.ts, record.ts, suppression.ts).
export { forgetBounces } from './data/address-bounces.ts';
export { forgetComplaint } from './data/mailbox-complaints.ts';
