// What the spam filter is sent for a submission (the message rspamd reads, built from the claimed
// row), and what is read of its answer.
import { describe, expect, it } from 'vitest';
import type { ClaimedSubmission } from '../../../src/shared/deliveries/deliveries.ts';
import { readScan, sampleMessage } from '../../../src/shared/spam/spam-filter.ts';
import { spamSampleOf } from '../../../src/shared/spam/samples.ts';
import { defaultSubject } from '../../../src/shared/submissions/submissions.ts';

const claimed: ClaimedSubmission = {
  id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  test: false,
  email: 'visitor@example.org',
  message: 'What does the yearly plan cost? Call me on 0171 946 0958 before 5.',
  subject: 'Pricing for 2026',
  customFields: [['company', 'Acme 12345 Ltd']],
  createdAt: new Date('2026-11-27T10:00:00Z'),
  keyEmail: 'Owner+forms@Example.com',
  attachmentCount: 1,
  suppressedUntil: null,
  complained: false,
  hasRecipients: false,
  subjectLabel: null,
  keyLabel: null,
  emailLayout: { subject: null, fieldOrder: [], hiddenFields: [], files: 'attach' },
  keyMailbox: 'owner@example.com',
  spamFilter: 'normal',
  ownerStatistics: false,
  spamVerdict: null,
  spamMark: null,
  clientIp: null,
  autoresponseOn: false,
};
const MAIL_FROM = 'forms@service.example';
/** The message for `submission` split into its header lines and its body. */
function sent(submission: ClaimedSubmission = claimed, filenames = ['quote.pdf']) {
  const text = sampleMessage(spamSampleOf(submission, filenames, MAIL_FROM)).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  return { text, headers: text.slice(0, end).split('\r\n'), body: text.slice(end + 4) };
}

describe('the message the spam filter reads', () => {
  it("is the email's headers: our sender, the key's owner, the visitor to reply to, the subject", () => {
    expect(sent().headers).toEqual([
      'From: forms@service.example',
      'To: Owner+forms@Example.com',
      'Reply-To: visitor@example.org',
      'Subject: Pricing for 0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
    ]);
  });

  it('is the custom fields, the message and the files by name only, with CRLF line ends', () => {
    expect(sent().body).toBe(
      'company: Acme 00000 Ltd\r\n\r\nWhat does the yearly plan cost? Call me on 0000 000 0000 before 5.\r\n\r\nFiles:\r\n- quote.pdf\r\n',
    );
    expect(sent({ ...claimed, customFields: [], message: 'line one\nline two\rline three' }, []).body).toBe('line one\r\nline two\r\nline three\r\n');
  });

  it('writes numbers of 3 digits or more as their length only, and leaves shorter ones as written', () => {
    const { body } = sent({ ...claimed, customFields: [], message: 'Order 2 boxes for 12 EUR, ref 98765, tel +44 20 7946 0958, 2day' }, []);
    expect(body).toBe('Order 2 boxes for 12 EUR, ref 00000, tel +44 20 0000 0000, 2day\r\n');
  });

  it("has no subject for a submission that came without one: the service's own says nothing of the message", () => {
    expect(sent({ ...claimed, subject: defaultSubject(claimed.email) }).headers).toContain('Subject: ');
  });

  it('keeps every header on one line whatever the visitor typed, so no header can be added', () => {
    const { headers } = sent({ ...claimed, subject: 'Hi\r\nBcc: victim@example.net', email: 'a@example.org\nX-Spam: no' });
    expect(headers).toContain('Subject: Hi Bcc: victim@example.net');
    expect(headers).toContain('Reply-To: a@example.org X-Spam: no');
    expect(headers).toHaveLength(7);
  });

  it('writes a subject that is not ASCII as an RFC 2047 encoded word', () => {
    const subject = sent({ ...claimed, subject: 'Angebot für Müller' }).headers.find((line) => line.startsWith('Subject: '))!;
    expect(subject).toBe(`Subject: =?UTF-8?B?${Buffer.from('Angebot für Müller').toString('base64')}?=`);
  });
});

describe("the sample's recipient", () => {
  it("is the key owner's mailbox, whose own statistics apply once they count", () => {
    expect(spamSampleOf(claimed, [], MAIL_FROM)).toMatchObject({
      ownerEmail: 'Owner+forms@Example.com',
      ownerMailbox: 'owner@example.com',
      ownerStatistics: false,
    });
    expect(spamSampleOf({ ...claimed, ownerStatistics: true }, [], MAIL_FROM).ownerStatistics).toBe(true);
  });

  it("is empty when the key is gone, rather than another owner's", () => {
    expect(spamSampleOf({ ...claimed, keyEmail: null, keyMailbox: null }, [], MAIL_FROM)).toMatchObject({ ownerEmail: '', ownerMailbox: '' });
  });
});

describe("the filter's answer", () => {
  /** An answer of rspamd's /checkv2, as it sends it. */
  const answer = {
    is_skipped: false,
    score: 7.456,
    required_score: 15,
    action: 'add header',
    symbols: {
      BAYES_SPAM: { name: 'BAYES_SPAM', score: 5.1, metric_score: 5.1, description: 'Message probably spam, probability: 99%' },
      FORM_LINKS: { name: 'FORM_LINKS', score: 1.5 },
      R_PARTS_DIFFER: { name: 'R_PARTS_DIFFER', score: 0.267 },
      FORM_SHOUTING: { name: 'FORM_SHOUTING', score: 0.3 },
      MIME_GOOD: { name: 'MIME_GOOD', score: -0.1, description: 'Known content-type' },
      FORM_NO_NAME: { name: 'FORM_NO_NAME', score: 0.2 },
      FORM_SHORT: { name: 'FORM_SHORT', score: 0.1 },
      ARC_NA: { name: 'ARC_NA', score: 0 },
    },
    milter: { remove_headers: { 'X-Spam': 0 } },
  };

  it('is its score, to two decimals, and the five rules that pushed it up most, strongest first', () => {
    expect(readScan(answer)).toEqual({
      score: 7.46,
      reasons: [
        { symbol: 'BAYES_SPAM', score: 5.1, description: 'Message probably spam, probability: 99%' },
        { symbol: 'FORM_LINKS', score: 1.5 },
        { symbol: 'FORM_SHOUTING', score: 0.3 },
        { symbol: 'R_PARTS_DIFFER', score: 0.27 },
        { symbol: 'FORM_NO_NAME', score: 0.2 },
      ],
    });
  });

  it('without a score, or with one that is not a finite number, is refused (the email then goes unchecked)', () => {
    expect(() => readScan({ symbols: {} })).toThrow('the spam filter answered without a score');
    expect(() => readScan({ score: '7' })).toThrow('without a score');
    expect(() => readScan({ score: null })).toThrow('without a score');
    expect(() => readScan(null)).toThrow();
  });

  it('gives no reason for a rule that lowered the score or left it as it was', () => {
    expect(readScan({ score: -1.5, symbols: { MIME_GOOD: { score: -0.1, description: 'Known content-type' }, ARC_NA: { score: 0 } } })).toEqual({
      score: -1.5,
      reasons: [],
    });
    expect(readScan({ score: -1.5 })).toEqual({ score: -1.5, reasons: [] });
  });
});
