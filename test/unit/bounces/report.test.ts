// What the bounce receiver makes of the messages relays and mailboxes send to a return path: the
// standard reports, the prose bounces of older MTAs, and what is not a bounce at all.
import { describe, expect, it } from 'vitest';
import { readReport } from '../../../src/shared/bounces/report.ts';
import { abuseReport, dsn } from '../../../tools/sample-reports.ts';

const TO = 'b-s-0123456789abcdef0123456789abcdef-0123456789abcdef@bounces.test';
const message = (...lines: string[]) => Buffer.from(lines.join('\r\n'));

/** A multipart/report with a delivery-status part whose fields are given as they appear. */
const report = (statusPart: string, contentType = 'message/delivery-status') =>
  message(
    'From: MAILER-DAEMON@mx.example.net',
    `To: ${TO}`,
    'Subject: Delivery Status Notification (Failure)',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="r"',
    '',
    '--r',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'Delivery has failed to these recipients.',
    '',
    '--r',
    `Content-Type: ${contentType}`,
    '',
    statusPart,
    '',
    '--r--',
    '',
  );

describe('reading reports', () => {
  it("reads Postfix's DSN for an unknown local user: hard, 5.1.1, its X-Postfix diagnostic", async () => {
    const verdict = await readReport(
      report(
        [
          'Reporting-MTA: dns; relay.local.test',
          'X-Postfix-Queue-ID: 4XYZ123',
          'Arrival-Date: Wed, 25 Nov 2026 02:00:00 +0000 (UTC)',
          '',
          'Final-Recipient: rfc822; nobody-1@local.test',
          'Original-Recipient: rfc822;nobody-1@local.test',
          'Action: failed',
          'Status: 5.1.1',
          'Diagnostic-Code: X-Postfix; unknown user: "nobody-1"',
        ].join('\r\n'),
      ),
      { sender: '' },
    );
    expect(verdict).toEqual({
      type: 'hard',
      status: '5.1.1',
      diagnostic: 'unknown user: "nobody-1"',
      reportingMta: 'relay.local.test',
      recipient: 'nobody-1@local.test',
    });
  });

  it('reads a full mailbox (5.2.2) as hard, a 4.x.x failure as soft, and a delay as delayed', async () => {
    const full = await readReport(message(dsn({ to: TO, status: '5.2.2', diagnostic: 'smtp; 552 5.2.2 Mailbox full' })), { sender: '' });
    expect(full).toMatchObject({ type: 'hard', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full' });
    const soft = await readReport(message(dsn({ to: TO, status: '4.4.7', diagnostic: 'smtp; 421 4.4.7 expired' })), { sender: '' });
    expect(soft).toMatchObject({ type: 'soft', status: '4.4.7' });
    const delayed = await readReport(message(dsn({ to: TO, action: 'delayed', status: '4.4.1' })), { sender: '' });
    expect(delayed).toMatchObject({ type: 'delayed', status: '4.4.1' });
  });

  it('takes the most severe recipient of a multi-recipient report, and a global (UTF-8) delivery status', async () => {
    const several = await readReport(
      report(
        [
          'Reporting-MTA: dns; mx.example.net',
          '',
          'Final-Recipient: rfc822; a@example.com',
          'Action: delivered',
          'Status: 2.0.0',
          '',
          'Final-Recipient: rfc822; b@example.com',
          'Action: delayed',
          'Status: 4.4.1',
          '',
          'Final-Recipient: rfc822; c@example.com',
          'Action: failed',
          'Status: 5.7.1',
          'Diagnostic-Code: smtp; 550 5.7.1 Message rejected as spam',
        ].join('\r\n'),
      ),
      { sender: '' },
    );
    expect(several).toMatchObject({ type: 'hard', status: '5.7.1', recipient: 'c@example.com', diagnostic: '550 5.7.1 Message rejected as spam' });
    const global = await readReport(
      report(
        ['Reporting-MTA: dns; mx.example.jp', '', 'Final-Recipient: utf-8; 用户@example.jp', 'Action: failed', 'Status: 5.1.1'].join('\r\n'),
        'message/global-delivery-status',
      ),
      { sender: '' },
    );
    expect(global).toMatchObject({ type: 'hard', status: '5.1.1', recipient: '用户@example.jp' });
  });

  it('derives the status from the diagnostic when the Status field is missing or garbled, and unfolds long fields', async () => {
    const garbled = await readReport(
      report(
        [
          'Reporting-MTA: dns; exchange.example.org',
          '',
          'Final-Recipient: rfc822;someone@example.org',
          'Action: failed',
          'Status: five-one-one',
          'Diagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient',
          ' someone@example.org not found by SMTP address lookup',
        ].join('\r\n'),
      ),
      { sender: '' },
    );
    expect(garbled).toMatchObject({
      type: 'hard',
      status: '5.1.10',
      diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient someone@example.org not found by SMTP address lookup',
      reportingMta: 'exchange.example.org',
    });
  });

  it('ignores a success notification (relayed or delivered)', async () => {
    expect(await readReport(message(dsn({ to: TO, action: 'delivered', status: '2.0.0' })), { sender: '' })).toEqual({
      type: 'ignored',
      reason: 'a success notification (delivered)',
    });
  });

  it('reads an ARF abuse report as a complaint, and ignores other feedback types', async () => {
    expect(await readReport(message(abuseReport(TO)), { sender: 'fbl@isp.example' })).toMatchObject({
      type: 'complaint',
      diagnostic: 'abuse report from ExampleFBL/1.0',
    });
    expect(await readReport(message(abuseReport(TO, 'not-spam')), { sender: 'fbl@isp.example' })).toMatchObject({ type: 'ignored' });
  });

  it("reads a prose bounce from a null sender (qmail's) by the code in its text", async () => {
    const qmail = message(
      'From: MAILER-DAEMON@mail.example.com',
      `To: ${TO}`,
      'Subject: failure notice',
      '',
      'Hi. This is the qmail-send program at mail.example.com.',
      "I'm afraid I wasn't able to deliver your message to the following addresses.",
      "This is a permanent error; I've given up. Sorry it didn't work out.",
      '',
      '<owner@example.com>:',
      '192.0.2.25 does not like recipient.',
      'Remote host said: 550 5.1.1 <owner@example.com>... User unknown',
      'Giving up on 192.0.2.25.',
      '',
    );
    expect(await readReport(qmail, { sender: '' })).toMatchObject({
      type: 'hard',
      status: '5.1.1',
      diagnostic: 'Remote host said: 550 5.1.1 <owner@example.com>... User unknown',
    });
    const basicOnly = message(
      'From: postmaster@old.example',
      `To: ${TO}`,
      'Subject: Returned mail',
      '',
      'The following address failed:',
      '550 No such user here',
      '',
    );
    expect(await readReport(basicOnly, { sender: '' })).toMatchObject({ type: 'hard', status: null, diagnostic: '550 No such user here' });
  });

  it('ignores what is not a bounce: an auto-reply, a person, garbage, an empty message', async () => {
    const outOfOffice = message(
      'From: owner@example.com',
      `To: ${TO}`,
      'Subject: Out of office',
      'Auto-Submitted: auto-replied',
      '',
      'Back on Monday. 550 reasons to wait.',
      '',
    );
    expect(await readReport(outOfOffice, { sender: '' })).toEqual({ type: 'ignored', reason: 'an auto-reply' });
    const person = message('From: owner@example.com', `To: ${TO}`, 'Subject: Re: New submission', '', 'Thanks, got it: 5.1.1 is my favourite number.', '');
    expect(await readReport(person, { sender: 'owner@example.com' })).toMatchObject({ type: 'ignored' });
    const garbage = Buffer.from(Array.from({ length: 1024 * 1024 }, (_, i) => (i * 7919 + 13) % 256));
    expect(await readReport(garbage, { sender: '' })).toMatchObject({ type: 'ignored' });
    expect(await readReport(Buffer.alloc(0), { sender: '' })).toMatchObject({ type: 'ignored' });
    const noAction = report('Reporting-MTA: dns; mx.example.net\r\n\r\nFinal-Recipient: rfc822; a@example.com');
    expect(await readReport(noAction, { sender: '' })).toEqual({ type: 'ignored', reason: 'a delivery status without a recipient action' });
  });

  it('keeps a diagnostic to one line of at most 1,000 characters, without control or bidi characters', async () => {
    const verdict = await readReport(message(dsn({ to: TO, diagnostic: `smtp; 550 5.1.1 \u202etxt.exe ${'x'.repeat(3000)}` })), { sender: '' });
    if (verdict.type === 'ignored') throw new Error('expected a bounce');
    expect(verdict.diagnostic!.length).toBeLessThanOrEqual(1000);
    expect(verdict.diagnostic).not.toMatch(/[\u202e\r\n]/);
  });
});
