// Measures a JSON text before JSON.parse builds it, in one pass over the characters: how many
// values it holds (object members and array elements, at any depth) and how deeply it nests.
// A body past either limit is refused before any object is built, so a 1 MB body of 100,000
// fields costs one scan instead of a parse, a validation and a 400 listing every field.

export type JsonShapeLimits = { values: number; depth: number };
export type JsonShapeBreach = 'values' | 'depth' | undefined;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** The first limit the text breaks, or undefined. Not a validator: JSON.parse still decides. */
export function jsonShapeBreach(text: string, limits: JsonShapeLimits): JsonShapeBreach {
  let values = 0;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth += 1;
      values += 1; // the container's first member, if any; each comma adds one more
      if (depth > limits.depth) return 'depth';
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth -= 1;
    else if (c === COMMA) values += 1;
    if (values > limits.values) return 'values';
  }
  return undefined;
}
