// The subject pattern of a key's email: placeholders with a default after a bar, and what an empty
// placeholder without one leaves behind (nothing: no empty brackets, no dangling separator).
import { describe, expect, it } from 'vitest';
import { parseEmailSubject, renderSubjectPattern } from '../../../src/shared/keys/email-layout.ts';
import { KeyRuleError } from '../../../src/shared/keys/keys.ts';

const PATTERN = 'New lead from {name}: {subject} [{field:plan}]';
const render = (pattern: string, fields: Array<[string, string]> = [], subject = 'Quote') =>
  renderSubjectPattern(pattern, { subject, email: 'visitor@example.org', key: 'Shop', customFields: fields });

describe('a placeholder with a value', () => {
  it('is filled as before, the default unused', () => {
    expect(
      render(PATTERN, [
        ['name', 'Ada'],
        ['plan', 'Pro'],
      ]),
    ).toBe('New lead from Ada: Quote [Pro]');
    expect(render('{name|a visitor} at {key|our shop}', [['name', 'Ada']])).toBe('Ada at Shop');
  });
});

describe('an empty placeholder with a default', () => {
  it('shows the default, for a simple placeholder and a field', () => {
    expect(render('New lead from {name|a visitor}: {subject}')).toBe('New lead from a visitor: Quote');
    expect(render('{subject} [{field:plan|no plan}]')).toBe('Quote [no plan]');
    expect(render('{subject} [{field:plan|no plan}]', [['plan', '   ']])).toBe('Quote [no plan]');
  });
});

describe('an empty placeholder without a default', () => {
  it('leaves no empty brackets and no dangling separator', () => {
    expect(render(PATTERN)).toBe('New lead from Quote');
    expect(render(PATTERN, [['name', 'Ada']])).toBe('New lead from Ada: Quote');
    expect(render(PATTERN, [['plan', 'Pro']])).toBe('New lead from Quote [Pro]');
  });

  it('takes a separator before it along when it ends the subject or comes before brackets', () => {
    expect(render('{subject} - {name}')).toBe('Quote');
    expect(render('{subject} - {name} (via {key})')).toBe('Quote (via Shop)');
    expect(render('{name}, {field:company}: {subject}', [['name', 'Ada']])).toBe('Ada: Quote');
  });

  it('takes quotes and several empty placeholders in one pair along', () => {
    expect(render('Lead "{name}" ({field:first} {field:last}) {subject}')).toBe('Lead Quote');
  });

  it('keeps what the owner wrote around placeholders with values, and pairs that do not match', () => {
    expect(render('[] {subject} - x')).toBe('[] Quote - x');
    expect(render('{subject} ({name]')).toBe('Quote ({name]');
    expect(render('{field:count}/10 {subject}')).toBe('/10 Quote');
  });

  it('gives nothing when every placeholder is empty', () => {
    expect(render('{name}: {field:plan}')).toBe('');
  });
});

describe('saving a pattern', () => {
  it('accepts defaults after a bar, and still refuses unknown placeholders', () => {
    expect(parseEmailSubject('{name|a visitor}: {field:plan|none}')).toBe('{name|a visitor}: {field:plan|none}');
    expect(() => parseEmailSubject('{phone|none}')).toThrow(KeyRuleError);
    expect(() => parseEmailSubject('{phone|none}')).toThrow('{phone}');
  });
});
