// The one template mechanism (src/shared/infra/templates.ts): HTML escaped by default and raw only when
// asked for by name, plain text as written, and a misspelt variable an error rather than a blank.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTemplates } from '../../../src/shared/infra/templates.ts';
import { renderEmail } from '../../../src/workers/delivery/email-templates.ts';

const dir = mkdtempSync(join(tmpdir(), 'cfs-templates-'));
writeFileSync(join(dir, 'misspelt.njk'), '<p>{{ mesage }}</p>');
writeFileSync(join(dir, 'both.njk'), '{{ value }}|{{ value | safe }}');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('templates', () => {
  it('makes a misspelt variable an error, in HTML and in text', () => {
    for (const kind of ['html', 'text'] as const) {
      expect(() => createTemplates(dir, kind).render('misspelt', { message: 'hi' })).toThrow(/misspelt\.njk.*\n.*undefined value/);
    }
  });

  it("makes a value missing from an email's data an error, not a blank", () => {
    expect(() => renderEmail('sign-in', 'Sign in', { email: 'owner@example.test', link: 'https://forms.example.test/owner/link' })).toThrow(
      /sign-in\.(html|text)\.njk.*\n.*undefined value/,
    );
  });

  it('escapes HTML unless raw output is asked for by name; text keeps the characters', () => {
    const value = `<b>"A" & 'B'</b>`;
    expect(createTemplates(dir, 'html').render('both', { value })).toBe(`&lt;b&gt;&quot;A&quot; &amp; &#39;B&#39;&lt;/b&gt;|${value}`);
    expect(createTemplates(dir, 'text').render('both', { value })).toBe(`${value}|${value}`);
  });
});
