// Reads JSON object bodies. koa-body reads the bytes (bounded, with the charset handled) and
// JSON.parse builds the object, so a field named __proto__ stays plain data instead of being
// refused (co-body's parser rejects such bodies outright).
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { AppState } from '../context.ts';
import { ApiError, errors } from '../errors.ts';
import { jsonShapeBreach } from './json-shape.ts';

export const JSON_LIMIT_BYTES = 1024 * 1024;
/** Fields one body may carry, whatever its type (JSON values, urlencoded pairs, multipart fields). */
export const BODY_FIELD_LIMIT = 200;
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/** Reads a JSON or urlencoded body as text into ctx.request.body; over 1 MB is a 413. */
export const readBodyText = koaBody({
  text: true,
  textTypes: ['application/json', FORM_TYPE],
  textLimit: JSON_LIMIT_BYTES,
  json: false,
  urlencoded: false,
  multipart: false,
});

/** Bounds on a JSON body, checked before it is parsed. */
export const JSON_SHAPE_LIMITS = { values: BODY_FIELD_LIMIT, depth: 10 } as const;

export function parseJsonObject(text: string): Record<string, unknown> {
  const breach = jsonShapeBreach(text, JSON_SHAPE_LIMITS);
  if (breach === 'values') throw errors.tooManyFields(JSON_SHAPE_LIMITS.values);
  if (breach === 'depth') throw errors.malformedBody(`nested deeper than ${JSON_SHAPE_LIMITS.depth} levels.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw errors.malformedBody('not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw errors.malformedBody('expected a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

/** Middleware: requires Content-Type application/json and leaves the parsed object in ctx.request.body. */
export function jsonObjectBody(onWrongType: () => ApiError): Middleware<AppState> {
  return async (ctx, next) => {
    if (!ctx.is('application/json')) throw onWrongType();
    await readBodyText(ctx, async () => undefined);
    (ctx.request as { body: unknown }).body = parseJsonObject(String(ctx.request.body ?? ''));
    await next();
  };
}
