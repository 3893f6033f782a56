// A route file reads as a list (docs/architecture.md, "Source layout"): each function under src/api that
// registers routes (`router.get(…)`, `router.post(…)`, …) is at most 60 lines; a longer handler is
// a named function in a module of its own. It parses every file (TypeScript's parser, so comments
// and strings never count) and needs no service.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MAX_LINES = 60;
const ROUTE_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete', 'del', 'options', 'head', 'all', 'use']);

type RouteFunction = { file: string; name: string; lines: number };

function apiFiles(): string[] {
  return readdirSync(path.join(ROOT, 'src/api'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.posix.join('src/api', name.split(path.sep).join('/')))
    .sort();
}

const isRegistration = (node: ts.Node): boolean =>
  ts.isCallExpression(node) &&
  ts.isPropertyAccessExpression(node.expression) &&
  ts.isIdentifier(node.expression.expression) &&
  /router$/i.test(node.expression.expression.text) &&
  ROUTE_METHODS.has(node.expression.name.text);

function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

/** Each function that registers a route itself (a registration in a function nested in it counts for the nested one). */
function routeFunctions(file: string, text: string): RouteFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = new Map<ts.FunctionLikeDeclaration, RouteFunction>();
  const visit = (node: ts.Node, enclosing: ts.FunctionLikeDeclaration | undefined): void => {
    if (isRegistration(node) && enclosing && !found.has(enclosing)) {
      const start = source.getLineAndCharacterOfPosition(enclosing.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(enclosing.getEnd()).line;
      found.set(enclosing, { file, name: nameOf(enclosing), lines: end - start + 1 });
    }
    const inner =
      ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isMethodDeclaration(node) ? node : enclosing;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, undefined);
  return [...found.values()];
}

describe('route-registering functions under src/api', () => {
  const all = apiFiles().flatMap((file) => routeFunctions(file, readFileSync(path.join(ROOT, file), 'utf8')));

  it('are found: the rule reads the files it means to', () => {
    expect(all.map((route) => route.name)).toEqual(expect.arrayContaining(['submissionRoutes', 'adminRoutes', 'ownerWebhookRoutes']));
  });

  it(`are at most ${MAX_LINES} lines each, so that a route file reads as a list`, () => {
    const long = all.filter((route) => route.lines > MAX_LINES);
    expect(long.map((route) => `${route.file}: ${route.name} is ${route.lines} lines`)).toEqual([]);
  });

  it('counts a handler written inside the function that registers it', () => {
    const handler = Array.from({ length: MAX_LINES }, (_, n) => `    const line${n} = ${n};`).join('\n');
    const text = `export function longRoutes() {\n  const router = createRouter();\n  router.post('/x', async (ctx) => {\n${handler}\n  });\n  return router;\n}\n`;
    expect(routeFunctions('src/api/example.ts', text)).toEqual([{ file: 'src/api/example.ts', name: 'longRoutes', lines: MAX_LINES + 6 }]);
  });
});
