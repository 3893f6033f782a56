// The text the owner console's search matches a message against, as one SQL expression: the
// migration indexes it (GIN) and the search query repeats it word for word, or PostgreSQL would not
// use the index. The address is there whole and in parts, so "ana" finds ana@example.org.
export const SEARCH_DOCUMENT = `to_tsvector('simple'::regconfig, "email" || ' ' || translate("email", '@.+_-', '     ') || ' ' || "subject" || ' ' || "message" || ' ' || jsonb_path_query_array("custom_fields", '$[*][1]')::text)`;
