// The id of the `submission.created` delivery of a submission to an endpoint: the first 128 bits of
// the SHA-256 of both ids. Whoever writes that row (its webhook job, the claim of the submission's
// email, or the API for a submission that gets no email job) writes the same id, so it is written
// once and sent once. The claim computes it in SQL (../deliveries/data/claims.ts): the
// same formula, which test/webhooks/created-event.test.ts holds the two to.
import { createHash } from 'node:crypto';

export function createdEventId(submissionId: string, endpointId: string): string {
  // PostgreSQL writes a uuid as text in lower case: so is the text hashed here.
  const hex = createHash('sha256').update(`${submissionId.toLowerCase()}/${endpointId.toLowerCase()}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
