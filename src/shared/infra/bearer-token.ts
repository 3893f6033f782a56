// The operator token (ADMIN_TOKEN) as presented in an Authorization header: `Bearer <token>`, or
// Basic with the token as password (browsers on the queue dashboard). Used by the API's /admin
// and /metrics and by a worker's metrics port, so every operator surface checks it the same way.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string) => createHash('sha256').update(value).digest();

function presentedToken(header: string): string | undefined {
  const [scheme, value] = header.trim().split(/\s+/, 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : undefined;
  }
  return undefined;
}

/** Whether an Authorization header carries `token`. */
export function tokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token);
  return (authorization) => {
    const given = presentedToken(authorization ?? '');
    // Comparing fixed-length digests keeps the time independent of where the strings differ.
    return given !== undefined && timingSafeEqual(digest(given), expected);
  };
}
