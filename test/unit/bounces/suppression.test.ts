// Whether an email goes to an address that bounced repeatedly or a mailbox that complained.
import { describe, expect, it } from 'vitest';
import { COMPLAINT_SUPPRESSION, complaintStops, submissionSuppression } from '../../../src/shared/bounces/suppression.ts';
import { KEY_EMAIL_KINDS } from '../../../src/shared/keys/entities.ts';

describe("a submission's email", () => {
  it('goes to an address with no complaint and no suppression', () => {
    expect(submissionSuppression({ complained: false, suppressedUntil: null })).toBeUndefined();
  });

  it('is not attempted while its address is suppressed after hard bounces, saying until when', () => {
    expect(submissionSuppression({ complained: false, suppressedUntil: new Date('2026-12-01T10:00:00Z') })).toBe(
      'not attempted: this address bounced repeatedly; suppressed until 2026-12-01T10:00:00.000Z or until its owner signs in',
    );
  });

  it('is not attempted once its mailbox complained, until its owner signs in, also while bounces suppress it', () => {
    expect(submissionSuppression({ complained: true, suppressedUntil: null })).toBe(COMPLAINT_SUPPRESSION);
    expect(submissionSuppression({ complained: true, suppressedUntil: new Date('2026-12-01T10:00:00Z') })).toBe(COMPLAINT_SUPPRESSION);
    expect(COMPLAINT_SUPPRESSION).toMatch(/reported an email of this service as spam; suppressed until its owner signs in/);
  });
});

describe('a key email to a mailbox that complained', () => {
  it('is stopped when anyone could have caused it: a new key, the request to confirm', () => {
    expect(complaintStops('new-key')).toBe(true);
    expect(complaintStops('confirm')).toBe(true);
  });

  it("still goes when its owner asked for it or it is about the owner's own webhooks", () => {
    expect(KEY_EMAIL_KINDS.filter((kind) => !complaintStops(kind))).toEqual(['all-keys', 'sign-in', 'webhook-disabled', 'autoresponse-test']);
  });
});
