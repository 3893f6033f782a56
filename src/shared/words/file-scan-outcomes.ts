// The file scan's words that other features' tables hold: what the virus scan (src/shared/files)
// found in one stored file. A module of its own, importing nothing.

/**
 * `clean`: clamd found nothing. `infected`: clamd named a signature; the file reaches nobody.
 * `unscanned`: the scanner was down or slow past SCAN_WAIT_MS, and the file went out as a link.
 * `too_large_to_scan`: past SCAN_MAX_BYTES, or past clamd's own stream limit; linked, not attached.
 * Null: not scanned yet, or scanning is off.
 */
export const FILE_SCAN_OUTCOMES = ['clean', 'infected', 'unscanned', 'too_large_to_scan'] as const;
export type FileScanOutcome = (typeof FILE_SCAN_OUTCOMES)[number];
