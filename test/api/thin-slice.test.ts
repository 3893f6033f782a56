// The pipeline end to end: HTTP → PostgreSQL → BullMQ → worker → SMTP → `sent` in PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { submissionRow } from '../support/rows.ts';
import { count, expected, submitJson } from '../support/client.ts';
import { sleep } from '../support/sleep.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

describe('POST /api/contact-api/ (JSON)', () => {
  it('saves the submission, delivers it to the key owner and records `sent`', async () => {
    const key = await h.createKey({ email: 'owner@example.test' });
    const response = await submitJson(h, {
      access_key: key.key,
      email: 'visitor@example.org',
      message: 'Hello there,\nI would like a quote.',
      company: 'Acme',
    });

    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      message: 'Message sent successfully.',
      submission_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      attachments: 0,
      email_status: 'queued',
    });
    const id = response.json.submission_id as string;

    const [mail] = await h.sink.waitFor(1);
    expect(mail!.envelope.to).toEqual(['owner@example.test']);
    expect(mail!.parsed.from?.value[0]).toMatchObject({ name: 'Contact Form', address: 'forms@example.test' });
    expect(mail!.parsed.replyTo?.value[0]?.address).toBe('visitor@example.org');
    expect(mail!.parsed.subject).toBe('New contact form submission from visitor@example.org');
    expect(mail!.parsed.text).toContain('I would like a quote.');
    expect(mail!.parsed.text).toContain('company: Acme');
    expect(mail!.parsed.text).toContain(id);
    expect(mail!.parsed.html).toContain('I would like a quote.');
    expect(mail!.parsed.messageId).toBe(`<submission-${id}@example.test>`);

    const row = await eventually(async () => {
      const found = await submissionRow(h, id);
      return found?.email_status === 'sent' ? found : undefined;
    });
    expect(row.email_attempts).toBe(1);
    expect(row.sent_at).toBeInstanceOf(Date);
    expect(row.message_id).toBe(`<submission-${id}@example.test>`);
    expect(row.custom_fields).toEqual([['company', 'Acme']]);
  });

  it('enqueues a job of ids only (the submission and the request), under the submission id', async () => {
    const key = await h.createKey();
    const queue = h.api.deps.queue;
    await queue.pause();
    try {
      const response = await postJson(
        `${h.url}/api/contact-api/`,
        { access_key: key.key, email: 'a@example.org', message: 'hi' },
        { 'x-request-id': 'trace-me-123' },
      );
      expect(response.headers.get('x-request-id')).toBe('trace-me-123');
      const id = response.json.submission_id as string;
      const job = await queue.getJob(id);
      expect(job?.data).toEqual({ submissionId: id, requestId: 'trace-me-123' });
    } finally {
      await queue.resume();
    }
  });

  it('refuses an unknown key with 403 and saves nothing', async () => {
    const before = await count(h, 'submissions');
    const response = await submitJson(h, {
      access_key: '00000000-0000-4000-8000-000000000000',
      email: 'a@example.org',
      message: 'hi',
    });
    expect(response.status).toBe(403);
    expect(response.json).toEqual(expected.invalidKey);
    expect(await count(h, 'submissions')).toBe(before);
  });

  it('answers missing fields with the spec body', async () => {
    const response = await submitJson(h, { email: ' ' });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      success: false,
      message: 'Missing required fields.',
      errors: {
        __all__: ['Missing required fields.'],
        access_key: ['This field is required.'],
        email: ['This field is required.'],
        message: ['This field is required.'],
      },
    });
  });
});

describe('submission ids', () => {
  it('are time-ordered UUID v7, so a later submission sorts after an earlier one', async () => {
    const key = await h.createKey();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message: `ordered ${i}` });
      expect(response.status).toBe(200);
      ids.push(response.json.submission_id as string);
      // A few milliseconds apart, so that the ids' time parts differ and their order is the submissions'.
      await sleep(5);
    }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    // The id carries its creation time (milliseconds in the first 48 bits), close to the row's own.
    const [row] = await h.sql<{ ms: number }>('select (extract(epoch from created_at) * 1000)::float8 as ms from submissions where id = $1', [ids[0]]);
    expect(Math.abs(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16) - row!.ms)).toBeLessThan(60_000);
  });
});

describe('health', () => {
  it('answers /healthz and /readyz, naming the SMTP circuit breaker as such', async () => {
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ checks: { postgres: 'ok', redis: 'ok', storage: 'ok' }, down: [], delivery: { smtp: { breaker: 'closed' } } });
  });
});
