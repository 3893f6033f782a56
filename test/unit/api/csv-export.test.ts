// A cell of the CSV export: quoted as RFC 4180 says, and never run as a formula by the
// spreadsheet that opens it (a visitor wrote the text).
import { describe, expect, it } from 'vitest';
import { csvCell } from '../../../src/api/submissions/submissions-csv.ts';

describe('a CSV cell', () => {
  it('is the text as it is when it needs no quoting', () => {
    expect(csvCell('Hello there')).toBe('Hello there');
  });

  it('is quoted, its quotes doubled, when it holds a comma, a quote or a line break', () => {
    expect(csvCell('a, b')).toBe('"a, b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line one\r\nline two')).toBe('"line one\r\nline two"');
  });

  it('that a spreadsheet would run as a formula starts with a quote mark', () => {
    expect(csvCell('=HYPERLINK("http://evil.example","click")')).toBe('"\'=HYPERLINK(""http://evil.example"",""click"")"');
    for (const value of ['+1+1', '-2+3', '@SUM(A1)']) expect(csvCell(value), value).toBe(`'${value}`);
    expect(csvCell('\tcmd')).toBe(`"'\tcmd"`);
  });

  it('is quoted when a spreadsheet splitting on ; or a tab would cut it, each piece guarded against formulas', () => {
    expect(csvCell('x;=1+1;y')).toBe(`"x;'=1+1;y"`);
    expect(csvCell('a\t@SUM(A1)')).toBe(`"a\t'@SUM(A1)"`);
    expect(csvCell('-1;-2')).toBe(`"'-1;'-2"`);
    expect(csvCell('tea; coffee')).toBe('"tea; coffee"');
  });
});
