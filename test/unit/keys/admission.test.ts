// Recipient consent at the door: a submission's email goes out now, waits for its recipient to
// confirm, or is not sent at all (not_email_sent), by the request, the mailbox's confirmation and
// its hourly allowance (UNCONFIRMED_EMAILS_PER_HOUR).
import { describe, expect, it } from 'vitest';
import { admissionBeforeAllowance, admissionByAllowance, secondsToNextHour } from '../../../src/shared/keys/admission.ts';

const email = { notEmailSent: false, fileCount: 0 };
const emailWithFiles = { notEmailSent: false, fileCount: 2 };
const skipped = { notEmailSent: true, fileCount: 0 };
const skippedWithFiles = { notEmailSent: true, fileCount: 1 };

describe('a confirmed mailbox', () => {
  it('gets every email at once, without spending an allowance', () => {
    expect(admissionBeforeAllowance(email, true)).toBe('queued');
    expect(admissionBeforeAllowance(emailWithFiles, true)).toBe('queued');
  });

  it('keeps a not_email_sent submission, with or without files, unsent', () => {
    expect(admissionBeforeAllowance(skipped, true)).toBe('skipped');
    expect(admissionBeforeAllowance(skippedWithFiles, true)).toBe('skipped');
  });
});

describe('an unconfirmed mailbox', () => {
  it('spends its allowance on every email, and on every not_email_sent submission that stores files', () => {
    expect(admissionBeforeAllowance(email, false)).toBe('ask-allowance');
    expect(admissionBeforeAllowance(skippedWithFiles, false)).toBe('ask-allowance');
  });

  it('spends nothing on a not_email_sent submission without files', () => {
    expect(admissionBeforeAllowance(skipped, false)).toBe('skipped');
  });

  it('gets the email at once while the allowance lasts', () => {
    expect(admissionByAllowance(email, true)).toBe('queued');
    expect(admissionByAllowance(skippedWithFiles, true)).toBe('skipped');
  });

  it('past its allowance, has the email held until it confirms, and a not_email_sent submission with files refused', () => {
    expect(admissionByAllowance(email, false)).toBe('held');
    expect(admissionByAllowance(emailWithFiles, false)).toBe('held');
    expect(admissionByAllowance(skippedWithFiles, false)).toBe('refused');
  });
});

describe('a refusal for a spent allowance', () => {
  it('says to retry when the clock hour turns', () => {
    expect(secondsToNextHour(Date.parse('2026-11-27T10:59:30Z'))).toBe(30);
    expect(secondsToNextHour(Date.parse('2026-11-27T10:00:00.500Z'))).toBe(3600);
    expect(secondsToNextHour(Date.parse('2026-11-27T10:15:00Z'))).toBe(2700);
  });
});
