// Group commit (src/shared/infra/group-commit.ts): concurrent submissions share one INSERT and one
// addBulk, and each is answered only once the write that carried it has committed. The batching
// itself, without a database: test/unit/infra/group-commit.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRecipient } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';

describe('concurrent submissions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.stop());

  it('each 200 comes after its own row committed, and every one is delivered once', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const committedAtAnswer = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const response = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'sender@example.org', message: `message ${i}` });
        expect(response.status).toBe(200);
        const rows = await h.sql('select id from submissions where id = $1', [response.json.submission_id]);
        return rows.length;
      }),
    );
    expect(committedAtAnswer).toEqual(Array(40).fill(1));
    await eventually(async () => ((await h.sql(`select count(*)::int as n from submissions where email_status = 'sent'`))[0]!.n === 40 ? true : undefined));
    const subjects = h.sink.messages.map((mail) => mail.parsed.text ?? '').filter((text) => /message \d+/.test(text));
    expect(subjects).toHaveLength(40);
  });
});
