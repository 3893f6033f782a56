// What a report that came back does to the row of the email it is about: the row's status and
// the report it carries already decide, so a relay that sends a report twice, or a delay that
// arrives after the bounce, changes nothing.
import { describe, expect, it } from 'vitest';
import { reportOutcome, type ReportedRow } from '../../../src/shared/bounces/outcome.ts';

const row = (emailStatus: ReportedRow['emailStatus'], bounceType: ReportedRow['bounceType'] = null): ReportedRow => ({ emailStatus, bounceType });

describe('a hard bounce', () => {
  it('makes a sent email bounced, also one whose `sent` was not recorded yet', () => {
    expect(reportOutcome(row('sent'), 'hard', 'submission')).toBe('bounced');
    expect(reportOutcome(row('sending'), 'hard', 'submission')).toBe('bounced');
    expect(reportOutcome(row('retrying', 'soft'), 'hard', 'submission')).toBe('bounced');
  });

  it('changes nothing on a row already bounced or complained of (a relay sending its DSN twice)', () => {
    expect(reportOutcome(row('bounced', 'hard'), 'hard', 'submission')).toBe('duplicate');
    expect(reportOutcome(row('complained', 'complaint'), 'hard', 'submission')).toBe('duplicate');
  });
});

describe('a complaint', () => {
  it('makes the row complained, also one that bounced before', () => {
    expect(reportOutcome(row('sent'), 'complaint', 'submission')).toBe('complained');
    expect(reportOutcome(row('bounced', 'hard'), 'complaint', 'submission')).toBe('complained');
  });

  it('changes nothing on a row complained of already', () => {
    expect(reportOutcome(row('complained', 'complaint'), 'complaint', 'submission')).toBe('duplicate');
  });
});

describe('a soft bounce or a delay', () => {
  it('is noted on the row, its status unchanged', () => {
    expect(reportOutcome(row('sent'), 'soft', 'submission')).toBe('noted');
    expect(reportOutcome(row('sent'), 'delayed', 'submission')).toBe('noted');
    expect(reportOutcome(row('sent', 'delayed'), 'soft', 'submission')).toBe('noted');
  });

  it('never replaces a stronger report, nor a final status', () => {
    expect(reportOutcome(row('sent', 'soft'), 'delayed', 'submission')).toBe('duplicate');
    expect(reportOutcome(row('bounced', 'hard'), 'soft', 'submission')).toBe('duplicate');
    expect(reportOutcome(row('complained', 'complaint'), 'delayed', 'submission')).toBe('duplicate');
  });
});

it('a report about a row that is gone (retention deleted it) does nothing', () => {
  expect(reportOutcome(undefined, 'hard', 'submission')).toBe('unknown');
  expect(reportOutcome(undefined, 'complaint', 'submission')).toBe('unknown');
});
