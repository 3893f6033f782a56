// The compiled path of the email templates (src/shared/template-compiler.ts) gives liquidjs's own
// output, byte for byte, and leaves to liquidjs whatever it does not handle.
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Liquid } from 'liquidjs';
import { describe, expect, it } from 'vitest';
import { compileTemplate } from '../../src/shared/template-compiler.ts';
import { createTemplates } from '../../src/shared/templates.ts';

const root = fileURLToPath(new URL('../../src/workers/templates/', import.meta.url));
const engineFor = (dir: string, kind: 'html' | 'text') =>
  new Liquid({ root: dir, extname: '.liquid', cache: true, strictVariables: true, strictFilters: true, ...(kind === 'html' ? { outputEscape: 'escape' as const } : {}) });

// Text a sender could write: markup, quotes, ampersands, blank and odd whitespace, any Unicode.
const senderText = fc.oneof(
  fc.string({ unit: fc.constantFrom('<', '>', '&', '"', "'", ' ', '\n', '\t', 'a', '\u00a0', '\u2028', '{{', '%}', 'é') }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('', ' ', '\n', 'x'),
);
const submissionData = fc.record({
  from: senderText,
  id: fc.uuid(),
  received: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  fields: fc.array(fc.record({ name: senderText, value: senderText, text: senderText }), { maxLength: 4 }),
  message: senderText,
  message_text: senderText,
  files: fc.array(fc.record({ label: senderText, link: fc.oneof(fc.constant(''), fc.constant(' '), fc.webUrl(), senderText), text: senderText }), { maxLength: 3 }),
  link_note: senderText,
});

describe('compiled email templates', () => {
  for (const kind of ['html', 'text'] as const) {
    it(`render the submission email's ${kind} part exactly as liquidjs does`, () => {
      const engine = engineFor(root, kind);
      const compiled = compileTemplate(engine, engine.parseFileSync(`submission.${kind}.liquid`));
      // Not a fallback: the fast path itself is what is compared.
      expect(compiled).toBeDefined();
      fc.assert(
        fc.property(submissionData, (data) => {
          expect(compiled!(data)).toBe(engine.renderFileSync(`submission.${kind}.liquid`, data));
        }),
        { numRuns: 300 },
      );
    });
  }

  it('leaves other constructs, other values and missing variables to liquidjs, with its output or its error', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'templates-'));
    writeFileSync(path.join(dir, 'filters.html.liquid'), '{{ name | upcase }}');
    writeFileSync(path.join(dir, 'loop.html.liquid'), '{% for item in items %}{{ forloop.index }}:{{ item }} {% endfor %}');
    writeFileSync(path.join(dir, 'plain.html.liquid'), '{% if items.size > 1 %}{{ name }}{% else %}none{% endif %}');
    const engine = engineFor(dir, 'html');
    expect(compileTemplate(engine, engine.parseFileSync('filters.html.liquid'))).toBeUndefined();
    expect(compileTemplate(engine, engine.parseFileSync('plain.html.liquid'))).toBeDefined();
    const fast = createTemplates(dir, 'html', { compiled: true });
    const slow = createTemplates(dir, 'html');
    for (const [name, data] of [
      ['filters.html', { name: '<b>' }],
      ['loop.html', { items: ['a', '<'] }],
      ['plain.html', { items: [1, 2], name: '"x"' }],
      ['plain.html', { items: 'abc', name: 7 }],
      // Values the compiled path does not take: a list as output, a Date, a number's size.
      ['plain.html', { items: [1, 2], name: ['a', '&'] }],
      ['plain.html', { items: [1, 2], name: new Date(0) }],
    ] as const) {
      expect(fast.render(name, data)).toBe(slow.render(name, data));
    }
    expect(() => fast.render('plain.html', { items: [1, 2] })).toThrow(/undefined variable: name/);
    expect(() => slow.render('plain.html', { items: [1, 2] })).toThrow(/undefined variable: name/);
  });
});
