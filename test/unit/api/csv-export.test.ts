// A cell of the CSV export: quoted as RFC 4180 says, and never run as a formula by the
// spreadsheet that opens it (a visitor wrote the text).
import { describe, expect, it } from 'vitest';
import { csvCell } from '../../../src/api/admin/export-routes.ts';

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
    for (const value of ['+1+1', '-2+3', '@SUM(A1)', '\tcmd']) expect(csvCell(value), value).toBe(`'${value}`);
  });
});
