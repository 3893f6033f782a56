// What the spam filter is sent to learn an owner's mark: the very message its check of the same
// submission was sent, so that the filter learns what it will be asked. A learning request is that
// message and the owner's mailbox (Deliver-To); the check's profile (ownerStatistics) is not part of it.
import { describe, expect, it } from 'vitest';
import type { ClaimedSubmission } from '../../../src/shared/deliveries/deliveries.ts';
import { sampleMessage } from '../../../src/shared/spam/spam-filter.ts';
import { spamSampleOf, teachingSampleOf, type MarkedSubmission } from '../../../src/shared/spam/samples.ts';
import { defaultSubject } from '../../../src/shared/submissions/submissions.ts';

const MAIL_FROM = 'forms@service.example';
const FILES = ['quote.pdf', 'floor plan 2026.png'];

/** A submission with everything the message holds: custom fields, long numbers, lines, files. */
const content = {
  email: 'visitor@example.org',
  subject: 'Pricing for 2026',
  message: 'What does the yearly plan cost?\nCall me on 0171 946 0958 before 5.\r\nThanks',
  customFields: [
    ['company', 'Acme 12345 Ltd'],
    ['phone', '+44 20 7946 0958'],
  ] as Array<[string, string]>,
};
const owner = { email: 'Owner+forms@Example.com', mailbox: 'owner@example.com' };

/** The submission as teaching loads it: the row and its key. */
const marked = (changes: Partial<typeof content> = {}): MarkedSubmission => ({ ...content, ...changes, key: owner });

/** The same submission as the delivery worker claims it for its check. */
const claimed = (changes: Partial<typeof content> = {}, ownerStatistics = false): ClaimedSubmission => ({
  ...content,
  ...changes,
  id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  test: false,
  createdAt: new Date('2026-11-27T10:00:00Z'),
  keyEmail: owner.email,
  keyMailbox: owner.mailbox,
  attachmentCount: FILES.length,
  suppressedUntil: null,
  complained: false,
  hasRecipients: false,
  subjectLabel: null,
  keyLabel: null,
  emailLayout: { subject: null, fieldOrder: [], hiddenFields: [], files: 'attach' },
  spamFilter: 'normal',
  ownerStatistics,
  spamVerdict: null,
  spamMark: 'spam',
  clientIp: '203.0.113.7',
  autoresponseOn: false,
});

const text = (buffer: Buffer) => buffer.toString('utf8');

describe('the message a mark teaches the spam filter', () => {
  it('is the message the check of the submission sent, byte for byte, for the same owner', () => {
    const taught = teachingSampleOf(marked(), FILES, MAIL_FROM);
    expect(text(sampleMessage(taught))).toBe(
      [
        'From: forms@service.example',
        'To: Owner+forms@Example.com',
        'Reply-To: visitor@example.org',
        'Subject: Pricing for 0000',
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 8bit',
        '',
        'company: Acme 00000 Ltd',
        'phone: +44 20 0000 0000',
        '',
        'What does the yearly plan cost?',
        'Call me on 0000 000 0000 before 5.',
        'Thanks',
        '',
        'Files:',
        '- quote.pdf',
        '- floor plan 2026.png',
        '',
      ].join('\r\n'),
    );
    for (const ownerStatistics of [false, true]) {
      const checked = spamSampleOf(claimed({}, ownerStatistics), FILES, MAIL_FROM);
      expect(text(sampleMessage(taught))).toBe(text(sampleMessage(checked)));
      expect(taught.ownerMailbox).toBe(checked.ownerMailbox);
    }
  });

  it('stays the checked message whatever the submission holds', () => {
    const variants: Array<[Partial<typeof content>, string[]]> = [
      [{ subject: defaultSubject(content.email) }, FILES],
      [{ subject: 'Angebot für Müller', customFields: [] }, []],
      [{ subject: 'Hi\r\nBcc: victim@example.net', email: 'a@example.org\nX-Spam: no' }, ['a\r\nb.txt']],
      [{ message: '', customFields: [['note', '']] }, []],
    ];
    for (const [changes, filenames] of variants) {
      const taught = sampleMessage(teachingSampleOf(marked(changes), filenames, MAIL_FROM));
      expect(text(taught), JSON.stringify(changes)).toBe(text(sampleMessage(spamSampleOf(claimed(changes), filenames, MAIL_FROM))));
    }
  });

  it("is the check's sample in every field but the check's own profile and the visitor's address", () => {
    const { ownerStatistics, visitorIp, ...checked } = spamSampleOf(claimed(), FILES, MAIL_FROM);
    expect(ownerStatistics).toBe(false);
    // Sent as rspamd's IP header, beside the message: it changes nothing rspamd learns.
    expect(visitorIp).toBe('203.0.113.7');
    expect(teachingSampleOf(marked(), FILES, MAIL_FROM)).toEqual(checked);
  });
});
