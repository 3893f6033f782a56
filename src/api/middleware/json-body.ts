// Reads a JSON object body: the content type is checked first, the size is bounded, and
// anything but a JSON object is refused in the form-style shape.
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import type { AppState } from '../context.ts';
import { ApiError, errors } from '../errors.ts';

export const JSON_LIMIT_BYTES = 1024 * 1024;

export function jsonObjectBody(onWrongType: () => ApiError): Middleware<AppState> {
  const parse = koaBody({
    json: true,
    jsonLimit: JSON_LIMIT_BYTES,
    jsonStrict: true,
    urlencoded: false,
    multipart: false,
    text: false,
  });
  return async (ctx, next) => {
    if (!ctx.is('application/json')) throw onWrongType();
    await parse(ctx, async () => {
      const body: unknown = ctx.request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw errors.malformedBody('expected a JSON object.');
      }
      await next();
    });
  };
}
