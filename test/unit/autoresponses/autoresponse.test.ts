// The autoresponse's email from the owner's words (its HTML part is the text escaped, paragraphs as
// <p>, bare https links made links), and which visitor addresses are a role's or a system's.
import { describe, expect, it } from 'vitest';
import { isRoleAddress, refusal, renderAutoresponse } from '../../../src/shared/autoresponses/autoresponses.ts';

const content = (text: string, label: string | null = 'Shop <contact>') => ({ subject: 'Thanks', text, label, receivedAt: new Date('2026-07-04T10:00:00Z') });

describe('the autoresponse email', () => {
  it("escapes the owner's markup, keeps paragraphs and lines, and links bare https links without their closing punctuation", () => {
    const email = renderAutoresponse(
      content('Hello <b>there</b> & "friends".\r\nSecond line.\n\n\nSee https://shop.example/a?b=1&c=2. Or http://plain.example'),
    );
    expect(email.html).toContain('<p>Hello &lt;b&gt;there&lt;/b&gt; &amp; &quot;friends&quot;.\r<br>\nSecond line.</p>');
    expect(email.html).toContain('<p>See <a href="https://shop.example/a?b=1&amp;c=2">https://shop.example/a?b=1&amp;c=2</a>. Or http://plain.example</p>');
    expect(email.html).not.toContain('<b>');
    expect(email.html).toContain('through &quot;Shop &lt;contact&gt;&quot; on 2026-07-04 (UTC)');
    expect(email.text).toBe(
      'Hello <b>there</b> & "friends".\r\nSecond line.\n\nSee https://shop.example/a?b=1&c=2. Or http://plain.example\n\n-- \nThis is an automatic reply to the message you sent through "Shop <contact>" on 2026-07-04 (UTC).\n',
    );
  });

  it('a link cannot leave its attribute', () => {
    const email = renderAutoresponse(content('https://x.example/"onmouseover="alert(1)', null));
    expect(email.html).toContain('<a href="https://x.example/">https://x.example/</a>&quot;onmouseover=&quot;alert(1)');
    expect(email.text).toContain('the message you sent on 2026-07-04');
  });
});

describe('role and system addresses', () => {
  it.each([
    'postmaster@example.org',
    'MAILER-DAEMON@example.org',
    'noreply@example.org',
    'No-Reply+forms@example.org',
    'abuse@example.org',
    'root@example.org',
    'list-request@example.org',
  ])('%s is one', (address) => expect(isRoleAddress(address)).toBe(true));
  it.each(['ana@example.org', 'rooted@example.org', 'postmaster.ana@gmail.com'])('%s is not', (address) => expect(isRoleAddress(address)).toBe(false));
});

describe('the rules before the bounds', () => {
  const facts = {
    email: 'ana@example.org',
    spam_verdict: 'ham',
    autoresponse_enabled: true,
    has_content: true,
    spam_filter: 'normal',
    confirmed: true,
    suppressed: false,
    captcha_passed: true,
    review: null,
    key_created_at: new Date('2026-01-01T00:00:00Z'),
    owner_mailbox: 'owner@example.org',
    owner_since: new Date('2026-01-01T00:00:00Z'),
  } as const;
  it.each([
    [{}, undefined],
    [{ autoresponse_enabled: false }, 'off'],
    [{ has_content: false }, 'off'],
    [{ review: 'blocked' }, 'operator_off'],
    [{ confirmed: false }, 'not_confirmed'],
    [{ captcha_passed: false }, 'no_captcha'],
    [{ spam_filter: 'off' }, 'filter_off'],
    [{ spam_verdict: 'spam' }, 'spam'],
    [{ spam_verdict: 'unchecked' }, 'unchecked'],
    [{ spam_verdict: null }, 'unchecked'],
    [{ email: 'abuse@example.org' }, 'role_address'],
    [{ email: 'ana+prize@example.org' }, 'unusual_address'],
    [{ suppressed: true }, 'suppressed'],
  ] as const)('%j: %s', (change, expected) => expect(refusal({ ...facts, ...change }, 'on')).toBe(expected));

  it("follows the operator's AUTORESPONSES: off sends none, approval only for an approved key", () => {
    expect(refusal(facts, 'off')).toBe('operator_off');
    expect(refusal({ ...facts, review: 'approved' }, 'off')).toBe('operator_off');
    expect(refusal(facts, 'approval')).toBe('not_approved');
    expect(refusal({ ...facts, review: 'approved' }, 'approval')).toBeUndefined();
    expect(refusal({ ...facts, review: 'blocked' }, 'approval')).toBe('operator_off');
  });
});
