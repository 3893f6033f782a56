// CORS for the two public endpoints, exactly as the spec states: any origin, POST and OPTIONS,
// three request headers. @koa/cors keeps the headers on error responses (a 429 included).
import cors from '@koa/cors';
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';

const ALLOW_METHODS = 'POST, OPTIONS';
const ALLOW_HEADERS = 'Content-Type, X-Requested-With, Accept';

export const formCors: Middleware<AppState> = cors({
  origin: '*',
  allowMethods: ALLOW_METHODS,
  allowHeaders: ALLOW_HEADERS,
  keepHeadersOnError: true,
}) as Middleware<AppState>;

/** OPTIONS answers 204 with the three headers, also when it is not a full preflight request. */
export const preflight: Middleware<AppState> = (ctx) => {
  ctx.set({
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': ALLOW_METHODS,
    'Access-Control-Allow-Headers': ALLOW_HEADERS,
  });
  ctx.status = 204;
};

const CHALLENGE_METHODS = 'GET, OPTIONS';

/** The same for the captcha challenge a form's page fetches before it posts (GET). */
export const challengeCors: Middleware<AppState> = cors({
  origin: '*',
  allowMethods: CHALLENGE_METHODS,
  allowHeaders: ALLOW_HEADERS,
  keepHeadersOnError: true,
}) as Middleware<AppState>;

export const challengePreflight: Middleware<AppState> = (ctx) => {
  ctx.set({
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': CHALLENGE_METHODS,
    'Access-Control-Allow-Headers': ALLOW_HEADERS,
  });
  ctx.status = 204;
};
