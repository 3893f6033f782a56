// A visitor's text in a header of the owner's email (the subject, an attachment's name): mail
// clients decode RFC 2047 encoded words there, so a right-to-left override sent encoded
// (`=?UTF-8?Q?=E2=80=AEgpj.exe?=`, ASCII on the way in) must not come out of the decoding.
import { describe, expect, it } from 'vitest';
import { decodeEncodedWords, headerText } from '../../../src/shared/infra/display-text.ts';

const RLO = '\u202e';

describe('text for a header', () => {
  it('decodes encoded words as a mail client would, then drops the bidi controls they carried', () => {
    expect(decodeEncodedWords('=?UTF-8?Q?=E2=80=AEgpj.exe?=')).toBe(`${RLO}gpj.exe`);
    expect(headerText('=?UTF-8?Q?=E2=80=AEgpj.exe?=')).toBe('gpj.exe');
    expect(headerText(`=?utf-8?b?${Buffer.from(`invoice${RLO}fdp.exe`).toString('base64')}?=`)).toBe('invoicefdp.exe');
    expect(headerText('Order =?UTF-8?Q?=E2=81=A6abc=E2=81=A9?= now')).toBe('Order abc now');
  });

  it('decodes an encoded word inside another, and drops one it cannot decode', () => {
    const inner = '=?UTF-8?Q?=E2=80=AEexe.pdf?=';
    const outer = `=?UTF-8?B?${Buffer.from(inner).toString('base64')}?=`;
    expect(headerText(outer)).toBe('exe.pdf');
    let deep = inner;
    for (let n = 0; n < 6; n += 1) deep = `=?UTF-8?B?${Buffer.from(deep).toString('base64')}?=`;
    expect(headerText(deep)).not.toMatch(/=\?|\u202e/u);
    expect(headerText('=?x-unknown?Q?=E2=80=AE?=x')).toBe('\ufffdx');
  });

  it('keeps words in other scripts and charsets, and drops directional marks and C1 controls', () => {
    expect(headerText('=?ISO-8859-1?Q?Angebot_f=FCr_M=FCller?=')).toBe('Angebot für Müller');
    expect(headerText('=?UTF-8?Q?=D7=A9=D7=9C=D7=95=D7=9D?= \u200fshalom\u0085\u009b')).toBe('שלום shalom ');
    expect(headerText('Plain subject, 2+2=?')).toBe('Plain subject, 2+2=?');
  });
});
