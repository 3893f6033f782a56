// Tests wait for events, not time (docs/testing.md, "On a busy machine"): the one pause of the tests
// is `sleep` in test/support/sleep.ts, so that each sleep is found by its name and carries its
// reason; no file keeps a private one. The unit tier measures no duration on the real clock: a
// bound that holds on a quiet machine fails beside two busy loops; it uses vitest's fake timers, or
// asserts an order or a count. It parses every test file (TypeScript's parser, so comments and
// strings never count) and needs no service.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SLEEP_MODULE = 'test/support/sleep.ts';

function testFiles(): string[] {
  return readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.posix.join('test', name.split(path.sep).join('/')))
    .sort();
}

const parse = (file: string, text: string) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  ts.forEachChild(node, (child) => walk(child, visit));
}

const lineOf = (source: ts.SourceFile, node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;

const calls = (node: ts.Node, name: string) =>
  ts.isCallExpression(node) &&
  ((ts.isIdentifier(node.expression) && node.expression.text === name) ||
    (ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === name));

/** `new Promise((resolve) => setTimeout(resolve, ms))` in any spelling, and imports of node's timer promises: a sleep of the file's own. */
function privateSleeps(file: string, text: string): string[] {
  const source = parse(file, text);
  const found: string[] = [];
  walk(source, (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && /^(node:)?timers\/promises$/.test(node.moduleSpecifier.text)) {
      found.push(`${file}:${lineOf(source, node)} imports ${node.moduleSpecifier.text}`);
    }
    if (!ts.isNewExpression(node) || !ts.isIdentifier(node.expression) || node.expression.text !== 'Promise') return;
    const executor = node.arguments?.[0];
    if (!executor || !(ts.isArrowFunction(executor) || ts.isFunctionExpression(executor))) return;
    const resolve = executor.parameters[0]?.name;
    if (!resolve || !ts.isIdentifier(resolve)) return;
    let sleeps = false;
    walk(executor.body, (inner) => {
      if (!calls(inner, 'setTimeout')) return;
      const callback = (inner as ts.CallExpression).arguments[0];
      if (!callback) return;
      // setTimeout(resolve, ms), or setTimeout(() => resolve(), ms)
      let named = ts.isIdentifier(callback) && callback.text === resolve.text;
      if (ts.isArrowFunction(callback) || ts.isFunctionExpression(callback)) {
        walk(callback.body, (called) => {
          if (ts.isCallExpression(called) && ts.isIdentifier(called.expression) && called.expression.text === resolve.text) named = true;
        });
      }
      sleeps ||= named;
    });
    if (sleeps) found.push(`${file}:${lineOf(source, node)} sleeps on a promise of its own`);
  });
  return found;
}

const CLOCKS = new Set(['performance.now', 'Date.now', 'process.hrtime', 'process.hrtime.bigint', 'hrtime', 'hrtime.bigint']);
const isClockRead = (node: ts.Expression): boolean => {
  while (ts.isParenthesizedExpression(node)) node = node.expression;
  return ts.isCallExpression(node) && CLOCKS.has(node.expression.getText());
};

/** A duration taken on the real clock (`performance.now() - start`), in a file that does not put vitest's fake timers in its place. */
function realDurations(file: string, text: string): string[] {
  const source = parse(file, text);
  let fake = false;
  const found: string[] = [];
  walk(source, (node) => {
    if (calls(node, 'useFakeTimers')) fake = true;
    if (ts.isCallExpression(node) && /^process\.hrtime$|^hrtime$/.test(node.expression.getText()) && node.arguments.length > 0) {
      found.push(`${file}:${lineOf(source, node)} measures a duration: ${node.getText()}`);
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.MinusToken && (isClockRead(node.left) || isClockRead(node.right))) {
      found.push(`${file}:${lineOf(source, node)} measures a duration: ${node.getText()}`);
    }
  });
  return fake ? [] : found;
}

describe('the tests wait for events, not time', () => {
  const files = testFiles();

  it(`sleep only through ${SLEEP_MODULE}: no file keeps a sleep of its own`, () => {
    const found = files
      .filter((file) => file !== SLEEP_MODULE)
      .map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') }))
      // Parsed only when it could hold one: the parse of every file takes seconds.
      .filter(({ text }) => text.includes('setTimeout') || text.includes('timers/promises'))
      .flatMap(({ file, text }) => privateSleeps(file, text));
    expect(found).toEqual([]);
  });

  it('measure no duration on the real clock in the unit tier', () => {
    const found = files
      .filter((file) => file.startsWith('test/unit/'))
      .map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') }))
      .filter(({ text }) => text.includes('now()') || text.includes('hrtime'))
      .flatMap(({ file, text }) => realDurations(file, text));
    expect(found).toEqual([]);
  });

  it('would find each kind of private sleep and of real-clock duration', () => {
    const sleeps = [
      'const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));',
      'await new Promise<void>((done) => setTimeout(() => done(), 300));',
      'const pause = (ms) => new Promise(function (r) { setTimeout(r, ms); });',
      "import { setTimeout as wait } from 'node:timers/promises';",
    ];
    for (const text of sleeps) expect(privateSleeps('test/x.test.ts', text), text).toHaveLength(1);
    expect(privateSleeps('test/x.test.ts', 'await sleep(300); const timer = setTimeout(() => child.kill(), 1_000);')).toEqual([]);

    const durations = [
      'const start = performance.now(); await run(); expect(performance.now() - start).toBeLessThan(250);',
      'const took = Date.now() - started;',
      'const [s] = process.hrtime(begin);',
    ];
    for (const text of durations) expect(realDurations('test/unit/x.test.ts', text), text).toHaveLength(1);
    expect(realDurations('test/unit/x.test.ts', 'vi.useFakeTimers(); const start = performance.now(); expect(performance.now() - start).toBe(300);')).toEqual(
      [],
    );
    expect(realDurations('test/unit/x.test.ts', 'const inAMinute = new Date(Date.now() + 60_000);')).toEqual([]);
  });
});
