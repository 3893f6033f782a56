// The owner console's list filters, one schema for the pages, the JSON API and the CSV download:
// q (full-text search), status, and a date range in whole UTC days (from and to both included).
import * as v from 'valibot';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import type { SubmissionPageQuery } from '../../shared/submissions/submissions.ts';

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const isDay = (value: string) => value === '' || (DAY.test(value) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value));
const day = (what: string) =>
  v.optional(
    v.pipe(v.string('Give one date.'), v.trim(), v.check(isDay, 'Give a date as YYYY-MM-DD.'), v.description(`${what}, as YYYY-MM-DD (a UTC day, included)`)),
    '',
  );

export const ListFilterSchema = v.pipe(
  v.object({
    q: v.optional(
      v.pipe(
        v.string('Give one search.'),
        v.trim(),
        v.maxLength(200, 'At most 200 characters.'),
        v.description("Words that must all begin a word of the visitor's address, the subject, the message or a field's value"),
      ),
      '',
    ),
    status: v.optional(
      v.pipe(
        v.picklist(['', ...EMAIL_STATUSES], `Must be one of ${EMAIL_STATUSES.join(', ')}.`),
        v.description('Only the messages whose email has this status'),
      ),
      '',
    ),
    from: day('Received on or after this day'),
    to: day('Received on or before this day'),
  }),
  v.forward(
    v.check((filters) => !filters.from || !filters.to || filters.from <= filters.to, 'The first day comes after the last.'),
    ['to'],
  ),
);
export type ListFilters = v.InferOutput<typeof ListFilterSchema>;

export const NO_FILTERS: ListFilters = { q: '', status: '', from: '', to: '' };

/** The filters as the shared list query takes them. */
export function pageQueryOf(filters: ListFilters): Omit<SubmissionPageQuery, 'keyHash' | 'limit'> {
  return {
    search: filters.q || undefined,
    status: filters.status || undefined,
    from: filters.from ? new Date(`${filters.from}T00:00:00Z`) : undefined,
    before: filters.to ? new Date(Date.parse(`${filters.to}T00:00:00Z`) + 86_400_000) : undefined,
  };
}

/** The filters that are set, as a query string for links (paging, CSV): "" when none. */
export function filterQuery(filters: ListFilters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filters, ...extra })) if (value) params.set(name, value);
  const text = params.toString();
  return text ? `?${text}` : '';
}

export const isFiltered = (filters: ListFilters) => Boolean(filters.q || filters.status || filters.from || filters.to);
