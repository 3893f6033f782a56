// Client file names are data, never paths: a display name for the email and the database,
// and a conservative name for the object key.
import { withoutBidiControls } from '../../shared/infra/display-text.ts';

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** The last path segment of the client's name, without control or bidi characters, at most 255 characters. */
export function displayFilename(raw: string | undefined): string {
  const lastSegment = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const clean = withoutBidiControls(lastSegment.normalize('NFC').replace(CONTROL, '')).trim();
  return clean === '.' || clean === '..' ? '' : Array.from(clean).slice(0, 255).join('');
}

/** Letters, digits, dot, dash and underscore only; never empty, never hidden, at most 100 characters. */
export function storageFilename(display: string): string {
  const safe = display
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 100);
  return safe || 'file';
}

/** A MIME type such as `image/png`; anything odd becomes application/octet-stream. */
export function safeContentType(raw: string | undefined): string {
  const type = (raw ?? '').trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(type) ? type : 'application/octet-stream';
}
