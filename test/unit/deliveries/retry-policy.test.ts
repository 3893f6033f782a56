// When a failed email is tried again and when it is given up: the backoff between attempts, which
// SMTP refusals are final, which failures the circuit breaker counts, and what the row keeps of them.
// The errors have the shape nodemailer gives them (code, command, responseCode, response).
import { describe, expect, it } from 'vitest';
import { describeSendError, isFinalFailure, isPermanentSmtpFailure, isSmtpServerFailure, retryDelay } from '../../../src/shared/deliveries/retry-policy.ts';

const DEFAULTS = { EMAIL_RETRY_BACKOFF_MS: 30_000, EMAIL_RETRY_MAX_BACKOFF_MS: 3_600_000 };
/** The shortest and the longest delay the jitter can give. */
const shortest = () => 0;
const longest = () => 1 - Number.EPSILON;

/** An SMTP refusal as nodemailer reports it. */
function refusal(command: string, reply: string): Error {
  return Object.assign(new Error(`Can't send mail - ${reply}`), {
    code: command === 'RCPT TO' ? 'EENVELOPE' : 'EMESSAGE',
    command,
    response: reply,
    responseCode: Number(reply.slice(0, 3)),
  });
}
const unreachable = (code: string) => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code });

describe('the delay before a retry', () => {
  it('starts at EMAIL_RETRY_BACKOFF_MS and doubles with each attempt', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelay(attempt, DEFAULTS, longest))).toEqual([29_999, 59_999, 119_999, 239_999]);
  });

  it('is shortened by the jitter to half at most, never lengthened', () => {
    expect(retryDelay(3, DEFAULTS, shortest)).toBe(60_000);
    expect(retryDelay(3, DEFAULTS, longest)).toBeLessThan(120_000);
  });

  it('never exceeds EMAIL_RETRY_MAX_BACKOFF_MS, however many attempts were made', () => {
    for (const attempt of [8, 130, 1_000_000]) {
      expect(retryDelay(attempt, DEFAULTS, longest)).toBeLessThanOrEqual(3_600_000);
      expect(retryDelay(attempt, DEFAULTS, shortest)).toBe(1_800_000);
    }
  });

  it('for a job that has made no attempt yet is the first one', () => {
    expect(retryDelay(0, DEFAULTS, shortest)).toBe(15_000);
  });
});

describe('an SMTP refusal', () => {
  it('is final when it is about this message: its recipient, its content, or its size', () => {
    expect(isPermanentSmtpFailure(refusal('RCPT TO', '550 5.1.1 <owner@example.com>: Recipient address rejected: User unknown'))).toBe(true);
    expect(isPermanentSmtpFailure(refusal('DATA', '554 5.7.1 Message rejected as spam'))).toBe(true);
    expect(isPermanentSmtpFailure(refusal('MAIL FROM', '552 5.3.4 Message size exceeds fixed limit'))).toBe(true);
  });

  it('is retried when it is about the server or our account with it: every message would get it', () => {
    expect(isPermanentSmtpFailure(refusal('MAIL FROM', '550 5.7.1 Sender address rejected: not owned by user'))).toBe(false);
    expect(isPermanentSmtpFailure(refusal('AUTH PLAIN', '535 5.7.8 Authentication credentials invalid'))).toBe(false);
    expect(isPermanentSmtpFailure(refusal('CONN', '554 5.7.1 No SMTP service here'))).toBe(false);
  });

  it('with a 4xx is retried, also for the recipient (greylisting)', () => {
    expect(isPermanentSmtpFailure(refusal('RCPT TO', '450 4.2.0 <owner@example.com>: Recipient address rejected: Greylisted'))).toBe(false);
    expect(isPermanentSmtpFailure(refusal('DATA', '451 4.3.0 Temporary failure'))).toBe(false);
  });

  it('is no refusal when the server was never reached', () => {
    expect(isPermanentSmtpFailure(unreachable('ECONNECTION'))).toBe(false);
    expect(isPermanentSmtpFailure(new Error('the attachment stream broke'))).toBe(false);
  });
});

describe('the circuit breaker', () => {
  it('counts a refusal and a server that cannot be reached or talked to', () => {
    expect(isSmtpServerFailure(refusal('RCPT TO', '451 4.3.0 Try later'))).toBe(true);
    for (const code of ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROTOCOL']) expect(isSmtpServerFailure(unreachable(code)), code).toBe(true);
  });

  it('does not count a failure of our own side (storage, a file, the database)', () => {
    expect(isSmtpServerFailure(new Error('The specified key does not exist.'))).toBe(false);
    expect(isSmtpServerFailure(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(false);
  });
});

describe('what the row keeps of a failure', () => {
  it("is the server's reply when there is one, else the error's message", () => {
    expect(describeSendError(refusal('RCPT TO', '550 5.1.1 User unknown'))).toBe('550 5.1.1 User unknown');
    expect(describeSendError(unreachable('ECONNECTION'))).toBe('connect ECONNREFUSED 127.0.0.1:25');
    expect(describeSendError('a string thrown')).toBe('a string thrown');
  });

  it('is at most 2,000 characters', () => {
    expect(describeSendError(refusal('DATA', `554 ${'x'.repeat(5000)}`))).toHaveLength(2000);
  });
});

describe('a failure', () => {
  const job = (attemptsMade: number, attempts?: number) => ({ attemptsMade, opts: attempts === undefined ? {} : { attempts } });

  it('ends the delivery when it is permanent, at any attempt', () => {
    expect(isFinalFailure(true, job(0, 1_000_000))).toBe(true);
  });

  it("ends the delivery at the job's last attempt, and not before", () => {
    expect(isFinalFailure(false, job(4, 5))).toBe(true);
    expect(isFinalFailure(false, job(3, 5))).toBe(false);
    // A job added without attempts has one.
    expect(isFinalFailure(false, job(0))).toBe(true);
  });
});
