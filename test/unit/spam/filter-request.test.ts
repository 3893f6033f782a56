// The head of a request to the spam filter: a value a visitor or an owner chose (the owner's
// mailbox goes in Deliver-To) must not break it into more lines, which would add a header of
// their choosing or start the body.
import { describe, expect, it } from 'vitest';
import { requestHead } from '../../../src/shared/infra/one-shot-http.ts';

describe('the head of a request to the filter', () => {
  it('is the request line, the host, each header and the length, ending in a blank line', () => {
    expect(requestHead('/checkv2', '127.0.0.1:11333', { 'Deliver-To': 'owner@example.com', 'Settings-ID': 'form' }, 42)).toBe(
      'POST /checkv2 HTTP/1.0\r\nHost: 127.0.0.1:11333\r\nDeliver-To: owner@example.com\r\nSettings-ID: form\r\nContent-Length: 42\r\n\r\n',
    );
  });

  it('is refused when a value holds a line break or a NUL', () => {
    for (const value of ['owner@example.com\r\nSettings-ID: nothing', 'owner@example.com\nX: y', 'owner@example.com\rX: y', 'a\u0000b']) {
      expect(() => requestHead('/checkv2', 'localhost', { 'Deliver-To': value }, 0), JSON.stringify(value)).toThrow('header "Deliver-To" cannot be sent');
    }
  });

  it('is refused when a header name is not a token', () => {
    for (const name of ['Deliver To', 'Deliver-To:', 'X\r\nY', ''])
      expect(() => requestHead('/', 'localhost', { [name]: 'x' }, 0), JSON.stringify(name)).toThrow('cannot be sent');
  });
});
