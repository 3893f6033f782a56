// What a webhook receiver's answer means for the delivery, when it is tried again, and whether a
// `submission.created` event waits for its spam verdict.
import { describe, expect, it } from 'vitest';
import {
  judgeWebhookAnswer,
  EMAIL_VERDICT_WAIT_MS,
  webhookRetryDelay,
  webhookSpamGate,
  type GatedSubmission,
} from '../../../src/shared/webhooks/delivery-policy.ts';

const answer = (status: number, body = '', retryAfterMs?: number) => ({ status, body, retryAfterMs });

describe("a receiver's answer other than 2xx", () => {
  it('is retried when it is 408, 429 or 5xx', () => {
    for (const status of [408, 429, 500, 502, 503]) expect(judgeWebhookAnswer(answer(status)).permanent, String(status)).toBe(false);
  });

  it('fails the delivery at once when it is another 4xx, or a redirect (not followed)', () => {
    expect(judgeWebhookAnswer(answer(404, 'Not Found'))).toEqual({ reason: 'HTTP 404: Not Found', permanent: true, counts: true });
    expect(judgeWebhookAnswer(answer(301))).toEqual({ reason: 'HTTP 301 (redirects are not followed)', permanent: true, counts: true });
  });

  it('keeps the Retry-After it asked for, and its body on one line of at most 200 characters', () => {
    const judged = judgeWebhookAnswer(answer(503, `<html>\n  <body>busy ${'z'.repeat(400)}</body>\n</html>`, 120_000));
    expect(judged.retryAfterMs).toBe(120_000);
    expect(judged.reason).toMatch(/^HTTP 503: <html> <body>busy z+$/);
    expect(judged.reason.length).toBe('HTTP 503: '.length + 200);
  });
});

describe('the delay before a webhook retry', () => {
  const config = { WEBHOOK_RETRY_BACKOFF_MS: 10_000, WEBHOOK_RETRY_MAX_BACKOFF_MS: 3_600_000 };

  it('doubles from WEBHOOK_RETRY_BACKOFF_MS like the emails', () => {
    expect(webhookRetryDelay(3, undefined, config, () => 0)).toBe(20_000);
  });

  it("is never sooner than the receiver's Retry-After, which is itself capped by the maximum backoff", () => {
    const asking = (ms: number) => Object.assign(new Error('HTTP 503'), { retryAfterMs: ms });
    expect(webhookRetryDelay(1, asking(120_000), config, () => 0)).toBe(120_000);
    expect(webhookRetryDelay(1, asking(7 * 24 * 3_600_000), config, () => 0)).toBe(3_600_000);
  });
});

describe('a submission.created event, while the workers check for spam', () => {
  const NOW = Date.parse('2026-11-27T12:00:00Z');
  const submission = (fields: Partial<GatedSubmission> = {}): GatedSubmission => ({
    keyFilter: 'normal',
    spamToWebhooks: false,
    spamVerdict: null,
    spamMark: null,
    emailStatus: 'queued',
    createdAt: new Date(NOW - 1_000),
    ...fields,
  });

  it("waits for the email's verdict while its worker holds it, or for a while in the queue", () => {
    expect(webhookSpamGate(true, submission(), NOW)).toBe('wait');
    expect(webhookSpamGate(true, submission({ emailStatus: 'sending', createdAt: new Date(NOW - 10 * 60_000) }), NOW)).toBe('wait');
  });

  it(`checks the submission itself once the email has waited ${EMAIL_VERDICT_WAIT_MS / 1000} s or an attempt failed`, () => {
    expect(webhookSpamGate(true, submission({ createdAt: new Date(NOW - EMAIL_VERDICT_WAIT_MS) }), NOW)).toBe('check');
    expect(webhookSpamGate(true, submission({ emailStatus: 'retrying' }), NOW)).toBe('check');
  });

  it('goes without a verdict when the email will not be sent, so never checked', () => {
    expect(webhookSpamGate(true, submission({ emailStatus: 'skipped' }), NOW)).toBe('send');
    expect(webhookSpamGate(true, submission({ emailStatus: 'held' }), NOW)).toBe('send');
  });

  it('goes with a verdict of ham, and is not sent for held spam unless the key asked for it', () => {
    expect(webhookSpamGate(true, submission({ spamVerdict: 'ham', emailStatus: 'sent' }), NOW)).toBe('send');
    expect(webhookSpamGate(true, submission({ spamVerdict: 'unchecked', emailStatus: 'retrying' }), NOW)).toBe('send');
    expect(webhookSpamGate(true, submission({ spamVerdict: 'spam', emailStatus: 'spam' }), NOW)).toBe('skip');
    expect(webhookSpamGate(true, submission({ spamVerdict: 'spam', emailStatus: 'spam', spamToWebhooks: true }), NOW)).toBe('send');
  });

  it("goes once the owner marked it not spam, and at once when the key's filter or the service's is off", () => {
    expect(webhookSpamGate(true, submission({ spamVerdict: 'spam', emailStatus: 'queued', spamMark: 'ham' }), NOW)).toBe('send');
    expect(webhookSpamGate(true, submission({ keyFilter: 'off' }), NOW)).toBe('send');
    expect(webhookSpamGate(false, submission(), NOW)).toBe('send');
  });
});
