// What a submission's fields become before anything is stored: the spec's named parameters, every
// other field kept as a custom field, and bad input refused with the spec's 400 bodies. A line
// break in the sender's address or the subject would add a header to the owner's email.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/api-errors.ts';
import { displayFilename, safeContentType, storageFilename } from '../../../src/api/submissions/filenames.ts';
import { parseSubmissionFields, type RawFields } from '../../../src/api/submissions/input.ts';

const base: RawFields = [
  ['access_key', 'a-key'],
  ['email', 'visitor@example.org'],
  ['message', 'Hello'],
];
/** The ApiError thrown for these fields. */
function refusal(fields: RawFields): ApiError {
  try {
    parseSubmissionFields(fields);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('the fields were accepted');
}

describe("a submission's fields", () => {
  it('are read into the named parameters, the rest kept as custom fields in arrival order', () => {
    const input = parseSubmissionFields([...base, ['phone', '555 0188'], ['subject', ' Quote '], ['From', 'evil@example.net'], ['tags', ['a', 'b']]]);
    expect(input).toEqual({
      accessKey: 'a-key',
      email: 'visitor@example.org',
      message: 'Hello',
      subject: 'Quote',
      successUrl: undefined,
      errorUrl: undefined,
      notEmailSent: false,
      customFields: [
        ['phone', '555 0188'],
        ['From', 'evil@example.net'],
        ['tags', 'a'],
        ['tags', 'b'],
      ],
    });
  });

  it("are refused when the sender's address or the subject holds a line break, naming the field", () => {
    for (const [name, value] of [
      ['email', 'visitor@example.org\r\nBcc: victim@example.net'],
      ['subject', 'Hi\nBcc: victim@example.net'],
    ] as const) {
      const error = refusal([...base.filter(([field]) => field !== name), [name, value]]);
      expect(error.status).toBe(400);
      expect(error.errors[name]).toEqual(['Must not contain line breaks.']);
    }
  });

  it('are refused without a required field, naming each missing one', () => {
    const error = refusal([
      ['access_key', 'a-key'],
      ['message', '  '],
    ]);
    expect(error).toMatchObject({ status: 400, id: 'missing_fields' });
    expect(Object.keys(error.errors).sort()).toEqual(['__all__', 'email', 'message']);
  });

  it('are refused when a named parameter is given twice, or holds a NUL that PostgreSQL cannot store', () => {
    expect(refusal([...base, ['email', 'other@example.org']]).errors.email).toEqual(['Must be given once.']);
    expect(refusal([...base, ['note', 'a\u0000b']]).errors.note).toEqual(['Must not contain NUL characters or unpaired surrogates.']);
  });

  it('keep a field called __proto__ as data', () => {
    const input = parseSubmissionFields([...base, ['__proto__', 'x']]);
    expect(input.customFields).toEqual([['__proto__', 'x']]);
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
  });

  it('read not_email_sent as the forms send it', () => {
    for (const value of [true, 'true', 'on', '1', 'YES'])
      expect(parseSubmissionFields([...base, ['not_email_sent', value]]).notEmailSent, String(value)).toBe(true);
    for (const value of [false, 'false', 'off', '0', ''])
      expect(parseSubmissionFields([...base, ['not_email_sent', value]]).notEmailSent, String(value)).toBe(false);
  });
});

describe("a file's name", () => {
  it('shown to the owner is the last segment of what the client sent, without control or bidi characters', () => {
    expect(displayFilename('C:\\Users\\me\\report.pdf')).toBe('report.pdf');
    expect(displayFilename('../../etc/passwd')).toBe('passwd');
    expect(displayFilename('invoice\u202efdp.exe')).toBe('invoicefdp.exe');
    expect(displayFilename('a\r\nb.txt')).toBe('ab.txt');
    expect(displayFilename('..')).toBe('');
    expect(displayFilename(undefined)).toBe('');
    expect(Array.from(displayFilename(`${'é'.repeat(300)}.txt`))).toHaveLength(255);
  });

  it('stored is letters, digits, dot, dash and underscore only, never hidden, never empty', () => {
    expect(storageFilename('Ångström report (final).pdf')).toBe('A_ngstro_m_report_final_.pdf');
    expect(storageFilename('.htaccess')).toBe('htaccess');
    expect(storageFilename('日本語')).toBe('file');
    expect(storageFilename('日本語.pdf')).toBe('pdf');
    expect(storageFilename('')).toBe('file');
    expect(storageFilename('x'.repeat(300))).toHaveLength(100);
  });

  it('comes with a MIME type only when it is one; anything odd is application/octet-stream', () => {
    expect(safeContentType(' Image/PNG ')).toBe('image/png');
    expect(safeContentType('text/html\r\nX-Injected: 1')).toBe('application/octet-stream');
    expect(safeContentType('text/html; charset=utf-8')).toBe('application/octet-stream');
    expect(safeContentType(undefined)).toBe('application/octet-stream');
  });
});
