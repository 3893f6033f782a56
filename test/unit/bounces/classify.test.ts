// What a message sent back to a return path reports: the fields of a delivery status (RFC 3464)
// or of an abuse report (RFC 5965), or a bounce in prose. The reports are those of
// tools/sample-reports.ts (what `npm run bounce:sample` and the receiver's tests send), and the
// shapes of real MTAs' reports.
import { describe, expect, it } from 'vitest';
import {
  classifyDeliveryStatus,
  classifyFeedbackReport,
  classifyMessage,
  classifyPlainBounce,
  type ReadMessage,
} from '../../../src/shared/bounces/classify.ts';
import { deliveryStatusFields, feedbackReportFields } from '../../../tools/sample-reports.ts';

const fields = (...lines: string[]) => lines.join('\r\n');
/** A message without report parts, from a mail system unless said otherwise. */
const prose = (text: string, headers: Partial<Omit<ReadMessage, 'parts' | 'text'>> = {}) => ({
  from: 'MAILER-DAEMON@mail.example.com',
  subject: 'failure notice',
  autoSubmitted: '',
  autoReplyHeader: false,
  text,
  ...headers,
});

describe('a delivery status notification', () => {
  it('with status 5.1.1 is a hard bounce of that recipient, with the relay and its diagnostic', () => {
    expect(classifyDeliveryStatus(deliveryStatusFields({ recipient: 'nobody@example.org', status: '5.1.1' }))).toEqual({
      type: 'hard',
      status: '5.1.1',
      diagnostic: '550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown',
      reportingMta: 'relay.example.net',
      recipient: 'nobody@example.org',
    });
  });

  it('with a 4.x.x failure is a soft bounce, and a delay is a delay whatever its code', () => {
    expect(classifyDeliveryStatus(deliveryStatusFields({ status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 Mailbox full' }))).toMatchObject({
      type: 'soft',
      status: '4.2.2',
    });
    expect(
      classifyDeliveryStatus(deliveryStatusFields({ action: 'delayed', status: '4.4.1', diagnostic: 'smtp; 451 4.4.1 Connection timed out' })),
    ).toMatchObject({
      type: 'delayed',
      status: '4.4.1',
    });
  });

  it('with a permanent 5.x.x other than an unknown user (mailbox full, refused as spam) is a hard bounce too', () => {
    expect(classifyDeliveryStatus(deliveryStatusFields({ status: '5.2.2', diagnostic: 'smtp; 552 5.2.2 Mailbox full' }))).toMatchObject({
      type: 'hard',
      status: '5.2.2',
    });
    expect(classifyDeliveryStatus(deliveryStatusFields({ status: '5.7.1', diagnostic: 'smtp; 550 5.7.1 Message rejected as spam' }))).toMatchObject({
      type: 'hard',
    });
  });

  it('that says the email was delivered or relayed is no bounce', () => {
    expect(classifyDeliveryStatus(deliveryStatusFields({ action: 'delivered', status: '2.0.0', diagnostic: 'smtp; 250 2.0.0 OK' }))).toEqual({
      type: 'ignored',
      reason: 'a success notification (delivered)',
    });
    expect(
      classifyDeliveryStatus(fields('Reporting-MTA: dns; mx.example.net', '', 'Final-Recipient: rfc822; a@example.com', 'Action: relayed', 'Status: 2.0.0')),
    ).toMatchObject({
      type: 'ignored',
    });
  });

  it('without any recipient action is no bounce', () => {
    expect(classifyDeliveryStatus(fields('Reporting-MTA: dns; mx.example.net', '', 'Final-Recipient: rfc822; a@example.com'))).toEqual({
      type: 'ignored',
      reason: 'a delivery status without a recipient action',
    });
    expect(classifyDeliveryStatus('')).toMatchObject({ type: 'ignored' });
  });

  it('naming several recipients is judged by the most severe: a failure over a delay over a delivery', () => {
    const verdict = classifyDeliveryStatus(
      fields(
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
      ),
    );
    expect(verdict).toMatchObject({ type: 'hard', status: '5.7.1', recipient: 'c@example.com', reportingMta: 'mx.example.net' });
  });

  it("takes the code from Exchange's diagnostic when its Status is garbled, and reads folded lines whole", () => {
    const verdict = classifyDeliveryStatus(
      fields(
        'Reporting-MTA: dns; exchange.example.org',
        '',
        'Final-Recipient: rfc822;someone@example.org',
        'Action: failed',
        'Status: five-one-one',
        'Diagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient',
        ' someone@example.org not found by SMTP address lookup',
      ),
    );
    expect(verdict).toEqual({
      type: 'hard',
      status: '5.1.10',
      diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient someone@example.org not found by SMTP address lookup',
      reportingMta: 'exchange.example.org',
      recipient: 'someone@example.org',
    });
  });

  it('with no enhanced code at all is judged by the basic reply code: 4xx soft, 5xx hard', () => {
    const withReply = (reply: string) => fields('Final-Recipient: rfc822; a@example.com', 'Action: failed', `Diagnostic-Code: smtp; ${reply}`);
    expect(classifyDeliveryStatus(withReply('450 Requested mail action not taken: mailbox unavailable'))).toMatchObject({ type: 'soft', status: null });
    expect(classifyDeliveryStatus(withReply('550 Requested action not taken: mailbox unavailable'))).toMatchObject({ type: 'hard', status: null });
  });

  it("reads Postfix's own fields: the recipient without its address type, the X-Postfix diagnostic without its type", () => {
    const verdict = classifyDeliveryStatus(
      fields(
        'Reporting-MTA: dns; relay.local.test',
        'X-Postfix-Queue-ID: 4XYZ123',
        '',
        'Final-Recipient: rfc822; nobody-1@local.test',
        'Original-Recipient: rfc822;nobody-1@local.test',
        'Action: failed',
        'Status: 5.1.1',
        'Diagnostic-Code: X-Postfix; unknown user: "nobody-1"',
      ),
    );
    expect(verdict).toMatchObject({ recipient: 'nobody-1@local.test', diagnostic: 'unknown user: "nobody-1"', reportingMta: 'relay.local.test' });
  });

  it('keeps a diagnostic to one line of at most 1,000 characters, without line breaks or bidi controls', () => {
    const verdict = classifyDeliveryStatus(deliveryStatusFields({ diagnostic: `smtp; 550 5.1.1 \u202etxt.exe\u0007 ${'x'.repeat(3000)}` }));
    if (verdict.type === 'ignored') throw new Error('expected a bounce');
    expect(verdict.diagnostic).toHaveLength(1000);
    expect(verdict.diagnostic).not.toMatch(/[\u202e\u0007\r\n]/);
  });
});

describe('a feedback report', () => {
  it('of type abuse is a complaint, naming who sent it', () => {
    expect(classifyFeedbackReport(feedbackReportFields())).toEqual({
      type: 'complaint',
      status: null,
      diagnostic: 'abuse report from ExampleFBL/1.0',
      reportingMta: null,
      recipient: null,
    });
  });

  it('names the mailbox that complained and the reporting MTA when the report carries them', () => {
    const verdict = classifyFeedbackReport(
      fields(
        'Feedback-Type: abuse',
        'User-Agent: SomeGenerator/1.0',
        'Version: 1',
        'Original-Rcpt-To: <owner@example.com>',
        'Reporting-MTA: dns; mail.example.com',
      ),
    );
    expect(verdict).toMatchObject({
      type: 'complaint',
      recipient: '<owner@example.com>',
      reportingMta: 'mail.example.com',
      diagnostic: 'abuse report from mail.example.com',
    });
  });

  it('of another type (not-spam, a fraud report) is no complaint', () => {
    expect(classifyFeedbackReport(feedbackReportFields('not-spam'))).toEqual({ type: 'ignored', reason: 'a feedback report of type not-spam' });
    expect(classifyFeedbackReport(feedbackReportFields('fraud'))).toMatchObject({ type: 'ignored' });
    expect(classifyFeedbackReport('Version: 1')).toEqual({ type: 'ignored', reason: 'a feedback report of type unknown' });
  });
});

describe('a message taken apart', () => {
  const part = (contentType: string, text: string) => ({ contentType, text: () => text });

  it('is read from its delivery status part, whatever its prose says, also a global (UTF-8) one', () => {
    const status = part('Message/Global-Delivery-Status', fields('Final-Recipient: utf-8; 用户@example.jp', 'Action: failed', 'Status: 5.1.1'));
    const message = { ...prose('This is a 4.4.1 delay, really.'), parts: [part('text/plain', 'Delivery has failed.'), status] };
    expect(classifyMessage(message, '')).toMatchObject({ type: 'hard', status: '5.1.1', recipient: '用户@example.jp' });
  });

  it('is read from its feedback report part when it has no delivery status', () => {
    const message = {
      ...prose(''),
      from: 'fbl@isp.example',
      parts: [part('text/plain', 'This is an email abuse report.'), part('message/feedback-report', feedbackReportFields())],
    };
    expect(classifyMessage(message, 'fbl@isp.example')).toMatchObject({ type: 'complaint' });
  });

  it('without a report part is read as prose', () => {
    const message = { ...prose('Remote host said: 550 5.1.1 <owner@example.com>... User unknown'), parts: [part('text/rfc822-headers', 'Subject: x')] };
    expect(classifyMessage(message, '')).toMatchObject({ type: 'hard', status: '5.1.1' });
  });
});

describe('a bounce in prose', () => {
  const qmail = [
    'Hi. This is the qmail-send program at mail.example.com.',
    "I'm afraid I wasn't able to deliver your message to the following addresses.",
    '',
    '<owner@example.com>:',
    '192.0.2.25 does not like recipient.',
    'Remote host said: 550 5.1.1 <owner@example.com>... User unknown',
  ].join('\n');

  it("from the null sender is judged by the first non-2.x.x enhanced code in its text (qmail's)", () => {
    expect(classifyPlainBounce(prose(qmail), '')).toEqual({
      type: 'hard',
      status: '5.1.1',
      diagnostic: 'Remote host said: 550 5.1.1 <owner@example.com>... User unknown',
      reportingMta: null,
      recipient: null,
    });
    expect(classifyPlainBounce(prose('Status 2.0.0 for the first one.\nThen: 452 4.2.2 mailbox full'), '')).toMatchObject({ type: 'soft', status: '4.2.2' });
  });

  it('with only a basic reply code at the start of a line is judged by it', () => {
    expect(classifyPlainBounce(prose('The following address failed:\n550 No such user here'), '')).toMatchObject({
      type: 'hard',
      status: null,
      diagnostic: '550 No such user here',
    });
    expect(classifyPlainBounce(prose('  421-Try again later'), '')).toMatchObject({ type: 'soft' });
  });

  it('from a person (a sender and a From that are not a mail system) is ignored, codes or not', () => {
    expect(classifyPlainBounce(prose('Thanks, got it: 5.1.1 is my favourite number.', { from: 'owner@example.com' }), 'owner@example.com')).toEqual({
      type: 'ignored',
      reason: 'not from a mail system (a person or an auto-reply)',
    });
    // A mail system's From, or its sender, is enough.
    expect(classifyPlainBounce(prose(qmail), 'someone@example.com')).toMatchObject({ type: 'hard' });
    expect(classifyPlainBounce(prose(qmail, { from: 'owner@example.com' }), 'postmaster@mail.example.com')).toMatchObject({ type: 'hard' });
  });

  it('that is an auto-reply (Auto-Submitted, X-Autoreply, an out-of-office subject) is ignored', () => {
    const text = 'Back on Monday.\n550 reasons to wait.';
    expect(classifyPlainBounce(prose(text, { autoSubmitted: 'Auto-Replied' }), '')).toEqual({ type: 'ignored', reason: 'an auto-reply' });
    expect(classifyPlainBounce(prose(text, { autoReplyHeader: true }), '')).toMatchObject({ type: 'ignored' });
    for (const subject of ['Out of Office: New submission', 'Automatic reply: hello', 'Abwesenheit bis Montag', 'On vacation']) {
      expect(classifyPlainBounce(prose(text, { subject }), ''), subject).toEqual({ type: 'ignored', reason: 'an auto-reply' });
    }
  });

  it('with no code at all is not recognised as a bounce', () => {
    expect(classifyPlainBounce(prose('Your message could not be delivered. Sorry.'), '')).toEqual({ type: 'ignored', reason: 'not recognised as a bounce' });
    expect(classifyPlainBounce(prose('Delivered: 2.0.0 OK'), '')).toMatchObject({ type: 'ignored' });
  });
});
