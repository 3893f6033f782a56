// A small HTTP client for tests that need what fetch does not give: a chosen loopback source
// address (to be a different client IP), no redirect following, raw bodies.
import http from 'node:http';

/** The body as JSON when it is JSON, else undefined: tests look at both. */
export function jsonOrUndefined(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export type RawResponse = { status: number; headers: http.IncomingHttpHeaders; text: string; json: any };

export function request(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    localAddress?: string;
    /** The request target sent as it is, instead of the URL's (which the URL parser normalises: no dot segments). */
    path?: string;
  } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        localAddress: options.localAddress,
        // Node spreads these over the URL's fields: an undefined path would replace the URL's.
        ...(options.path === undefined ? {} : { path: options.path }),
        timeout: 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: jsonOrUndefined(text) });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(options.body);
  });
}

export const form = (fields: Array<[string, string]>) => new URLSearchParams(fields).toString();
