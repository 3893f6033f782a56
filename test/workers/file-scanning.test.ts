// The virus scan of submitted files (docs/file-scanning.md), with a real clamd (test/support/clamd.ts)
// and its own signatures: a clean file is attached; an infected one reaches nobody (not attached or
// linked in the owner's email or a copy, deleted or quarantined, never downloadable) while the
// message says what was withheld; a clamd that is stopped or frozen costs time, never mail; a file
// past SCAN_MAX_BYTES is linked, not attached.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKeyRecipient, buildRecipient, type KeyRow } from '../support/factories.ts';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { startTestClamd, TEST_INFECTED_BYTES, TEST_INFECTED_SIGNATURE, type TestClamd } from '../support/clamd.ts';
import { signIn } from '../support/owner.ts';
import { adminClient } from '../support/client.ts';
import { registry } from '../../src/shared/infra/metrics.ts';
import { Readable } from 'node:stream';
import { pingClamd, scanStream } from '../../src/shared/files/files.ts';
import { EICAR, EICAR_SIGNATURE } from '../support/clamd.ts';

const SCAN_MAX_BYTES = 200_000;
const ADMIN_TOKEN = 'file-scanning-admin-token-of-32-characters';
let clamd: TestClamd;
let h: Harness;

beforeAll(async () => {
  clamd = await startTestClamd();
  h = await startHarness({
    env: {
      ...clamd.env,
      SCAN_MAX_BYTES: String(SCAN_MAX_BYTES),
      // Generous: a busy machine's scans must not pass for an outage here.
      CLAMD_TIMEOUT_MS: '20000',
      SCAN_WAIT_MS: '120000',
      QUARANTINE_DAYS: '2',
      RETENTION_INTERVAL_MS: '500',
      ADMIN_TOKEN,
    },
  });
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await clamd?.close();
});

type Upload = { name: string; data: Buffer; type?: string };

async function submitFiles(base: Harness, key: KeyRow, files: Upload[]): Promise<string> {
  const body = new FormData();
  body.set('access_key', key.key);
  body.set('email', 'visitor@example.org');
  body.set('message', 'files for you');
  for (const file of files) body.append('file', new Blob([file.data], { type: file.type ?? 'application/octet-stream' }), file.name);
  const response = await fetch(`${base.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { submission_id: string }).submission_id;
}

const mailTo = (base: Harness, address: string, id: string) =>
  eventually(
    async () => base.sink.messages.find((mail) => mail.envelope.to.includes(address) && (mail.parsed.text ?? '').includes(id)),
    60_000,
    `the email of ${id} to ${address}`,
  );
const sha256 = (data: Buffer | Uint8Array) => createHash('sha256').update(data).digest('hex');
const filesOf = (base: Harness, id: string) =>
  base.sql<{ id: string; filename: string; storage_key: string; scan_outcome: string | null; scan_detail: string | null; purge_at: Date | null }>(
    'select id, filename, storage_key, scan_outcome, scan_detail, purge_at from attachments where submission_id = $1 order by filename',
    [id],
  );
const objectsOf = async (base: Harness, id: string) => (await listObjectKeys(base.storage)).filter((objectKey) => objectKey.includes(id));

/** A key whose address confirmed it wants its messages, so nothing is held for consent. */
async function confirmedKey(base: Harness): Promise<KeyRow> {
  const key = await base.createKey();
  await buildRecipient(base, { mailbox: key.mailbox });
  return key;
}

describe("the service's clamd client", () => {
  it("answers clean, infected with the signature, and too large past clamd's StreamMaxLength (11M)", async () => {
    const address = { socket: clamd.socket };
    expect(await pingClamd(address, 10_000)).toBe(true);
    expect(await scanStream(address, Readable.from([Buffer.from('hello')]), 20_000)).toEqual({ kind: 'clean' });
    expect(await scanStream(address, Readable.from([Buffer.from(`prefix ${EICAR} suffix`)]), 20_000)).toEqual({ kind: 'infected', signature: EICAR_SIGNATURE });
    const pieces = Array.from({ length: 12 }, () => Buffer.alloc(1024 * 1024, 1));
    expect(await scanStream(address, Readable.from(pieces), 20_000)).toEqual({ kind: 'too-large' });
  });
});

describe('scanned files in the email', () => {
  it('attaches a clean file, and records it clean', async () => {
    const key = await confirmedKey(h);
    const clean = Buffer.from('a perfectly ordinary text file\n');
    const id = await submitFiles(h, key, [{ name: 'notes.txt', data: clean, type: 'text/plain' }]);
    const mail = await mailTo(h, key.email, id);
    expect(mail.parsed.attachments.map((file) => [file.filename, sha256(file.content)])).toEqual([['notes.txt', sha256(clean)]]);
    expect((await filesOf(h, id)).map((file) => file.scan_outcome)).toEqual(['clean']);
    expect(mail.parsed.text).not.toMatch(/virus|withheld/i);
  });

  it("withholds an infected file from the owner's email and a recipient's copy, says why, deletes the original and never serves it", async () => {
    const key = await confirmedKey(h);
    const colleague = await buildKeyRecipient(h, { key: key.id });
    const clean = Buffer.from('the clean one\n');
    const id = await submitFiles(h, key, [
      { name: 'invoice.exe', data: TEST_INFECTED_BYTES },
      { name: 'readme.txt', data: clean, type: 'text/plain' },
    ]);
    for (const address of [key.email, colleague.email]) {
      const mail = await mailTo(h, address, id);
      expect(mail.parsed.attachments.map((file) => file.filename)).toEqual(['readme.txt']);
      const text = mail.parsed.text ?? '';
      expect(text).toContain('invoice.exe');
      expect(text).toContain(`Withheld: infected (${TEST_INFECTED_SIGNATURE})`);
      expect(String(mail.parsed.html)).toContain(`Withheld: infected (${TEST_INFECTED_SIGNATURE})`);
      // No link of any kind to it: neither a signed URL nor the console's route.
      expect(text).not.toMatch(/https?:\/\/\S*invoice\.exe/);
      expect(String(mail.parsed.html)).not.toMatch(/href="[^"]*invoice\.exe/);
    }
    const [infected, readme] = await filesOf(h, id);
    expect([infected!.scan_outcome, infected!.scan_detail]).toEqual(['infected', TEST_INFECTED_SIGNATURE]);
    expect(readme!.scan_outcome).toBe('clean');
    // Quarantined (QUARANTINE_DAYS=2): only the quarantine copy is left, to be deleted in about 2 days.
    expect(infected!.storage_key).toMatch(/^quarantine\//);
    const objects = await objectsOf(h, id);
    expect(objects).toContain(infected!.storage_key);
    expect(objects).not.toContain(infected!.storage_key.slice('quarantine/'.length));
    const purgeIn = new Date(infected!.purge_at!).getTime() - Date.now();
    expect(purgeIn).toBeGreaterThan(1.9 * 86_400_000);
    expect(purgeIn).toBeLessThan(2.1 * 86_400_000);

    // The owner sees the outcome of each file; the infected one has no download, and every spelling of its route refuses it.
    const owner = await signIn(h, key.email);
    const record = await owner.api('GET', `/submissions/${id}`);
    expect(record.status).toBe(200);
    const attachments = JSON.parse(record.text).attachments as Array<{ id: string; filename: string; download: string | null; scan: unknown }>;
    expect(attachments.map((file) => [file.filename, file.scan, file.download === null])).toEqual([
      ['invoice.exe', { outcome: 'infected', detail: TEST_INFECTED_SIGNATURE }, true],
      ['readme.txt', { outcome: 'clean', detail: null }, false],
    ]);
    const page = await owner.get(`/owner/submissions/${id}`);
    expect(page.text).toContain(`Withheld: infected (${TEST_INFECTED_SIGNATURE})`);
    const fileId = infected!.id;
    const spellings = [
      `/owner/api/submissions/${id}/files/${fileId}`,
      `/owner/api/submissions/${id}/files/${fileId}/`,
      `/owner/api/submissions/${id.toUpperCase()}/files/${fileId.toUpperCase()}`,
      `/owner/submissions/${id}/files/${fileId}`,
      `/owner/submissions/${id}/files/${fileId}/`,
      `/owner/submissions/${id.toUpperCase()}/files/${fileId.toUpperCase()}`,
      `/owner/submissions/${id}/files/${fileId}?download=1`,
    ];
    for (const path of spellings) {
      const answer = await owner.get(path);
      expect([404, 410], path).toContain(answer.status);
      expect(answer.text).not.toContain(TEST_INFECTED_BYTES.toString().slice(0, 40));
    }
    const gone = await owner.get(`/owner/api/submissions/${id}/files/${fileId}`);
    expect(gone.status).toBe(410);
    expect(JSON.parse(gone.text)).toMatchObject({ success: false, errors: { __all__: [expect.stringContaining(TEST_INFECTED_SIGNATURE)] } });
    // The operator's record shows the same outcomes.
    const operator = await adminClient(() => h, ADMIN_TOKEN)('GET', `/admin/submissions/${id}`);
    expect((operator.json?.attachments as Array<{ filename: string; scan: unknown }>).map((file) => [file.filename, file.scan])).toEqual([
      ['invoice.exe', { outcome: 'infected', detail: TEST_INFECTED_SIGNATURE }],
      ['readme.txt', { outcome: 'clean', detail: null }],
    ]);
    // The clean file still downloads.
    expect((await owner.get(`/owner/api/submissions/${id}/files/${readme!.id}`)).status).toBe(200);
  });

  it('deletes a quarantined file from storage once QUARANTINE_DAYS are over', async () => {
    const key = await confirmedKey(h);
    const id = await submitFiles(h, key, [{ name: 'payload.bin', data: TEST_INFECTED_BYTES }]);
    await mailTo(h, key.email, id);
    const [file] = await filesOf(h, id);
    expect(file!.scan_outcome).toBe('infected');
    expect(await objectsOf(h, id)).toEqual([file!.storage_key]);
    // Two days on: the retention job (every 500 ms here) finds the quarantine over.
    await h.sql(`update attachments set purge_at = now() - interval '1 second' where id = $1`, [file!.id]);
    await eventually(async () => ((await objectsOf(h, id)).length === 0 ? true : undefined), 20_000, 'the quarantined object to be deleted');
    expect((await filesOf(h, id))[0]).toMatchObject({ scan_outcome: 'infected', purge_at: null });
  });

  it('links a file past SCAN_MAX_BYTES, too large to scan, instead of attaching it', async () => {
    const key = await confirmedKey(h);
    const big = Buffer.alloc(SCAN_MAX_BYTES + 1, 7);
    const id = await submitFiles(h, key, [{ name: 'big.bin', data: big }]);
    const mail = await mailTo(h, key.email, id);
    expect(mail.parsed.attachments).toHaveLength(0);
    expect(mail.parsed.text).toContain('Too large to scan for viruses');
    const link = /https?:\/\/\S+big\.bin\S*/.exec(mail.parsed.text ?? '')?.[0];
    expect(link).toBeDefined();
    expect(sha256(Buffer.from(await (await fetch(link!)).arrayBuffer()))).toBe(sha256(big));
    expect((await filesOf(h, id)).map((file) => file.scan_outcome)).toEqual(['too_large_to_scan']);
  });
});

describe('a scanner that is down or slow', () => {
  const SCAN_WAIT_MS = 5_000;
  let down: Harness;
  let hold: Harness;
  beforeAll(async () => {
    const quick = { ...clamd.env, CLAMD_TIMEOUT_MS: '1500', EMAIL_RETRY_BACKOFF_MS: '300', EMAIL_RETRY_MAX_BACKOFF_MS: '1000' };
    down = await startHarness({ env: { ...quick, SCAN_WAIT_MS: String(SCAN_WAIT_MS) } });
    hold = await startHarness({ env: { ...quick, SCAN_WAIT_MS: '500', SCAN_UNAVAILABLE: 'hold' } });
  }, 120_000);
  afterAll(async () => {
    await down?.stop();
    await hold?.stop();
  });

  /** The email went out only once SCAN_WAIT_MS had passed, with the file linked and marked unscanned. */
  async function expectUnscannedAfterWait(id: string, key: KeyRow, why: string) {
    const mail = await mailTo(down, key.email, id);
    // `sent` is written just after the SMTP server's acceptance.
    const waitedMs = await eventually(async () => {
      const [row] = await down.sql<{ waited_ms: string | null }>(
        'select extract(epoch from (sent_at - created_at)) * 1000 as waited_ms from submissions where id = $1',
        [id],
      );
      return row!.waited_ms === null ? undefined : Number(row!.waited_ms);
    });
    expect(waitedMs).toBeGreaterThanOrEqual(SCAN_WAIT_MS);
    expect(mail.parsed.attachments).toHaveLength(0);
    expect(mail.parsed.text).toContain(`Not scanned for viruses (${why})`);
    const link = /https?:\/\/\S+report\.txt\S*/.exec(mail.parsed.text ?? '')?.[0];
    expect(link).toBeDefined();
    expect((await fetch(link!)).status).toBe(200);
    expect((await filesOf(down, id)).map((file) => [file.scan_outcome, file.scan_detail])).toEqual([['unscanned', why]]);
  }

  it('with clamd stopped, waits SCAN_WAIT_MS, then sends the file unscanned: linked, not attached', async () => {
    const key = await confirmedKey(down);
    await clamd.stop();
    try {
      const id = await submitFiles(down, key, [{ name: 'report.txt', data: Buffer.from('report\n'), type: 'text/plain' }]);
      await expectUnscannedAfterWait(id, key, 'the scanner was unavailable');
    } finally {
      await clamd.start();
    }
  });

  it('with clamd frozen (accepting, never answering), each scan times out and the file goes out unscanned after SCAN_WAIT_MS', async () => {
    const key = await confirmedKey(down);
    clamd.pause();
    try {
      const id = await submitFiles(down, key, [{ name: 'report.txt', data: Buffer.from('report\n'), type: 'text/plain' }]);
      await expectUnscannedAfterWait(id, key, 'the scanner did not answer in time');
    } finally {
      clamd.resume();
    }
  });

  it('with SCAN_UNAVAILABLE=hold, keeps the email waiting while clamd is down, counted as waiting, and sends it scanned once clamd is back', async () => {
    const key = await confirmedKey(hold);
    const file = Buffer.from('held report\n');
    await clamd.stop();
    let id: string;
    try {
      id = await submitFiles(hold, key, [{ name: 'report.txt', data: file, type: 'text/plain' }]);
      // Several attempts, well past SCAN_WAIT_MS (500 ms), each waiting for the scanner.
      await eventually(
        async () => {
          const [row] = await hold.sql<{ attempts: number; waited: boolean }>(
            `select email_attempts as attempts, now() - created_at > interval '3 seconds' as waited from submissions where id = $1`,
            [id],
          );
          return row!.attempts >= 3 && row!.waited ? true : undefined;
        },
        60_000,
        'attempts that waited for the scanner',
      );
      const [row] = await hold.sql<{ email_status: string; last_error: string }>('select email_status, last_error from submissions where id = $1', [id]);
      expect(row!.email_status).not.toBe('sent');
      expect(row!.last_error).toContain('file scanner unavailable');
      expect(hold.sink.messages.filter((mail) => (mail.parsed.text ?? '').includes(id))).toEqual([]);
      expect(await registry.getSingleMetricAsString('cfs_file_scanner_waiting')).toMatch(/^cfs_file_scanner_waiting [1-9]/m);
    } finally {
      await clamd.start();
    }
    const mail = await mailTo(hold, key.email, id);
    expect(mail.parsed.attachments.map((attached) => sha256(attached.content))).toEqual([sha256(file)]);
    expect((await filesOf(hold, id)).map((stored) => stored.scan_outcome)).toEqual(['clean']);
  });
});
