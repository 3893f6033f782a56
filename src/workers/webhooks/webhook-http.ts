// One webhook POST: through the address guard (src/shared/webhooks/address-guard.ts) to exactly the address
// it checked, within a time limit, without following redirects. Returns the receiver's status (and
// its Retry-After), or throws for what never got an answer (refused address, network, timeout).
import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { buildInfo } from '../../shared/infra/version.ts';
import { pinnedLookup, refuseLiteralHost, type AddressPolicy, type ResolveAll } from '../../shared/webhooks/address-guard.ts';

export type WebhookAnswer = { status: number; retryAfterMs: number | undefined; body: string };

/** Named as before, now with the version, so a receiver's logs say which code posted. */
const USER_AGENT = `contact-form-service-webhooks/${buildInfo().version}`;

/** Of the receiver's answer, only this much is kept (for last_error); the rest is read and dropped. */
const KEPT_BODY_BYTES = 1024;

export async function postWebhook(
  target: string,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs: number; policy: AddressPolicy; resolveAll?: ResolveAll },
): Promise<WebhookAnswer> {
  const url = new URL(target);
  const refused = refuseLiteralHost(url.hostname, options.policy);
  if (refused) throw refused;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<WebhookAnswer>((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': USER_AGENT },
        // Names resolve through the guard, and the socket connects to the address it returned.
        lookup: pinnedLookup(options.policy, options.resolveAll),
        // One connection per delivery: a pooled socket could outlive the check of its address.
        agent: false,
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        response.on('data', (chunk: Buffer) => {
          if (kept < KEPT_BODY_BYTES) chunks.push(chunk.subarray(0, KEPT_BODY_BYTES - kept));
          kept += chunk.length;
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            retryAfterMs: parseRetryAfter(response.headers['retry-after']),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', (error: Error) =>
      reject(error.name === 'TimeoutError' || error.name === 'AbortError' ? new Error(`no answer within ${options.timeoutMs} ms`) : error),
    );
    request.end(body);
  });
}

/** The Standard Webhooks headers of one POST: its id, its time, and its body's signature with the endpoint's secret. */
export function signedHeaders(secret: string, webhookId: string, body: string, now = new Date()): Record<string, string> {
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(webhookId, now, body),
  };
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
