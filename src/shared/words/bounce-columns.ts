// The columns of the last report that came back for an email, on every table whose rows are emailed
// (submissions, key emails). Imports nothing of a feature, so that those tables can use it.
import { p } from '@mikro-orm/core';

/** What came back for an email: a hard or soft bounce, a delay notice, or an abuse complaint. */
export const BOUNCE_TYPES = ['hard', 'soft', 'delayed', 'complaint'] as const;
export type BounceType = (typeof BOUNCE_TYPES)[number];

/** The last report that came back for a row's email (the most severe one: a delay never hides a bounce). */
export const bounceColumns = () => ({
  bounceType: p.enum(BOUNCE_TYPES).nullable(),
  /** The enhanced status code, e.g. 5.1.1. */
  bounceStatus: p.string().length(16).nullable(),
  bounceDiagnostic: p.text().nullable(),
  /** The MTA that reported it (Reporting-MTA). */
  bounceMta: p.string().length(255).nullable(),
  bouncedAt: p.datetime().nullable(),
});
