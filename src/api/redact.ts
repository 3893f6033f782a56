// Keys are credentials, and a log must not hand them to whoever reads it. The admin routes take a
// key in the path (`PATCH /admin/keys/<key>`) and in query strings (`?key=`): both are redacted
// wherever a request's path or query is logged.
const REDACTED = '[redacted]';
// Matched on the decoded path, case-insensitively: the router also routes `/ADMIN/keys/...`.
const KEY_IN_PATH = /^(\/+admin\/+keys\/+)[^/]+/i;
const KEY_PARAMS = new Set(['key', 'access_key']);

const decoded = (value: string) => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

/** The path with the key of `/admin/keys/<key>` replaced by `[redacted]`. */
export function redactPath(path: string): string {
  const plain = decoded(path);
  return KEY_IN_PATH.test(plain) ? plain.replace(KEY_IN_PATH, `$1${REDACTED}`) : path;
}

/** The query string with the values of `key` and `access_key` replaced by `[redacted]`. */
export function redactQuery(querystring: string): string {
  return querystring
    .split('&')
    .map((pair) => {
      const name = pair.split('=', 1)[0]!;
      return KEY_PARAMS.has(decoded(name.replace(/\+/g, ' ')).trim().toLowerCase()) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
}
