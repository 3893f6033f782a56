// What the owner console's search matches a message against: the submissions' `search_document`
// column, a tsvector that a trigger writes on insert and on a change of the texts (migration
// search_document). It holds the visitor's address (whole and in parts, so "ana" finds
// ana@example.org), the subject, the first SEARCH_MESSAGE_CHARS characters of the message and the
// first SEARCH_FIELDS_CHARS of the custom fields' values: a stored, bounded text, so a search never
// parses a message again, and a 100,000-character message costs its index no more than a short one.
// `simple`: no language's stemming, since names, addresses and messages come in any language.
export const SEARCH_MESSAGE_CHARS = 5_000;
export const SEARCH_FIELDS_CHARS = 2_000;

/** The column, in the GIN index submissions_key_search_idx after key_id. */
export const SEARCH_DOCUMENT = 'search_document';
