// rspamd's controller on a Unix socket (SPAM_FILTER_CONTROLLER_URL=unix:…), as an operator may run it
// on the workers' host: the owners' marks are taught through it. rspamd asks the clients of such a
// socket for no password, so the socket itself must be its owner's alone.
import { stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { createSpamFilter } from '../../src/shared/spam/spam-filter.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';
import { formMessage, settledRecord, spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';

const TOKEN = 'controller-socket-admin-token-0123456789';

let filter: RspamdService;
let h: Harness;

beforeAll(async () => {
  filter = await startSpamFilter({ controllerOnSocket: true });
  h = await startHarness({ env: { ...spamFilterEnv(filter), ADMIN_TOKEN: TOKEN } });
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

describe("rspamd's controller on a Unix socket", () => {
  it("learns the owners' marks through it; the socket is for its owner only, since rspamd lets any client of it learn", async () => {
    expect(filter.controllerUrl).toMatch(/^unix:\//);
    const socket = await stat(decodeURIComponent(new URL(filter.controllerUrl).pathname));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);

    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const id = await submitTo(h, key, formMessage('spam', 1));
    expect((await settledRecord(h, TOKEN, id)).email_status).toBe('sent');
    const marked = await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam' });
    expect(marked.status).toBe(200);
    expect(marked.json.teaching).toBe('taught');
    // Learned: the same mark again has nothing to teach.
    expect((await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam' })).json.teaching).toBe('known');

    // Over TCP rspamd refuses a wrong password (spam-filter-bounds.test.ts); on its socket it does not ask.
    const stranger = createSpamFilter({ scanUrl: filter.url, controllerUrl: filter.controllerUrl, password: 'not-the-password' });
    const { subject, message } = formMessage('ham', 2);
    const sample = {
      mailFrom: 'forms@example.test',
      ownerEmail: key.email,
      ownerMailbox: key.email,
      visitorEmail: 'visitor@example.org',
      subject,
      message,
      customFields: [],
      filenames: [],
    };
    expect(await stranger.learn(sample, 'ham', 10_000)).toBe('taught');
  });
});
