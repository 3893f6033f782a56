// Reads JSON and urlencoded bodies with koa-body.
// - JSON: koa-body reads the bytes as text (bounded, with the charset handled), the shape is
//   measured before parsing (json-shape.ts), and JSON.parse builds the object. koa-body 8's own
//   JSON parsing cannot be used: it calls co-body without `onProtoPoisoning`, whose default
//   ('error') refuses any body with a field named __proto__, which must stay plain data here.
// - Submission urlencoded bodies: read as text too and split by URLSearchParams, which keeps the
//   fields' order and repeated names as pairs (qs, behind koa-body's urlencoded parser, merges
//   repeated names into arrays and moves integer-like names first).
// - Page forms that read named fields (the confirm page): koa-body's urlencoded parser, `formBody`.
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { AppState } from '../context.ts';
import { ApiError, errors } from '../api-errors.ts';
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

/**
 * Reads a page form's urlencoded body into ctx.request.body with koa-body (qs): names taken as
 * they are (no nesting, no dots, no arrays), the first of repeated names, at most
 * BODY_FIELD_LIMIT pairs (counted before decoding), over 1 MB a 413.
 */
export const formBody = koaBody({
  urlencoded: true,
  formLimit: JSON_LIMIT_BYTES,
  queryString: {
    depth: 0,
    allowDots: false,
    parseArrays: false,
    plainObjects: true,
    duplicates: 'first',
    parameterLimit: BODY_FIELD_LIMIT,
    throwOnLimitExceeded: true,
  },
  json: false,
  text: false,
  multipart: false,
  onError(error) {
    // qs refuses a body past parameterLimit with a RangeError (co-body marks it 400).
    if (error instanceof RangeError) throw errors.tooManyFields(BODY_FIELD_LIMIT);
    throw error;
  },
});

/** A string field of a body read by `formBody` ('' when absent). */
export function formField(body: unknown, name: string): string {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : '';
}

/** The text `readBodyText` left in ctx.request.body; '' when it read none (a method it does not parse). */
export function bodyText(request: { body?: unknown }): string {
  return typeof request.body === 'string' ? request.body : '';
}

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
    (ctx.request as { body: unknown }).body = parseJsonObject(bodyText(ctx.request));
    await next();
  };
}

/** As jsonObjectBody, for a body that may be left out: no body reads as `{}`. */
export function optionalJsonObjectBody(onWrongType: () => ApiError): Middleware<AppState> {
  const json = jsonObjectBody(onWrongType);
  return async (ctx, next) => {
    if (ctx.request.length || ctx.get('transfer-encoding')) {
      await json(ctx, next);
      return;
    }
    (ctx.request as { body: unknown }).body = {};
    await next();
  };
}
