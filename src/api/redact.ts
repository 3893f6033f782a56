// Credentials must not reach whoever reads a log. They travel in requests the request line logs:
// operator keys in the admin paths (`PATCH /admin/keys/<key>`) and queries (`?key=`), form keys
// (`?access_key=`), sign-in links (`/owner/link?token=`) and confirm links (`/confirm?…&token=`).
// Both the path and the query are redacted wherever a request's path or query is logged.
import { decoded } from './middleware/admin-auth.ts';

const REDACTED = '[redacted]';
const CREDENTIAL_PARAMS = new Set(['key', 'access_key', 'token']);

/**
 * The path with the key of `/admin/keys/<key>` replaced by `[redacted]`, in every spelling that
 * could name it: percent-encoded, in any case, with backslashes, doubled slashes and dot segments
 * (as the admin guard reads paths). Such a path is logged decoded, its separators kept.
 */
export function redactPath(path: string): string {
  // Segments at even indices, the separators between them at odd ones.
  const parts = decoded(path).split(/([/\\])/);
  const resolved: string[] = [];
  let redacted = false;
  for (let index = 0; index < parts.length; index += 2) {
    const segment = parts[index]!.toLowerCase();
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      resolved.pop();
      continue;
    }
    resolved.push(segment);
    // Every segment that lands third under /admin/keys, even one a later `..` takes back.
    if (resolved.length === 3 && resolved[0]!.startsWith('admin') && resolved[1]!.startsWith('keys')) {
      parts[index] = REDACTED;
      redacted = true;
    }
  }
  return redacted ? parts.join('') : path;
}

/**
 * The query string with the values of `key`, `access_key` and `token` replaced by `[redacted]`.
 * The API reads these names only exactly (URLSearchParams); spellings it does not read (`KEY`,
 * `key[]`, `key%5B0%5D`, `key.x`, a pair after `;`) are redacted too: what a client sent under them
 * is its credential all the same.
 */
export function redactQuery(querystring: string): string {
  return querystring
    .split(/([&;])/)
    .map((pair, index) => {
      if (index % 2 === 1) return pair;
      const name = pair.split('=', 1)[0]!;
      // As the API decodes it (URLSearchParams: `+`, lenient escapes), then any escapes left.
      const read = new URLSearchParams(`${name}=`).keys().next().value ?? '';
      const base = decoded(read).trim().toLowerCase().split(/[[.]/, 1)[0]!.trim();
      return CREDENTIAL_PARAMS.has(base) ? `${name}=${REDACTED}` : pair;
    })
    .join('');
}
