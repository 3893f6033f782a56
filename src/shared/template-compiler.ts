// A faster path for the Liquid templates, with liquidjs's own output. liquidjs evaluates every
// expression through generators: a submission email took about 60 µs and 120 KB of garbage to
// render, as much as the rest of a worker's own work per email (npm run bench, scenario 3). This
// turns a parsed template into plain closures, for a small subset of Liquid: text, `{{ a.b }}`
// (escaped by the engine's outputEscape, or `| raw`, or `| escape`), `if`/`elsif`/`else` on one
// comparison (`>`, `<`, `>=`, `<=` of numbers; `==`/`!=` against `blank`) or a variable's
// truthiness, `for x in list` without options, `layout` with a fixed file and named `block`s.
// compileTemplate returns undefined for any other construct, and the compiled closure throws
// Unsupported for any value it is not sure about (a missing variable, a value that is not a
// string, number, boolean, null, array or plain object, `size` of anything but an array or a
// string): the caller then renders through liquidjs. So the operators' templates stay the source,
// and test/workers/template-compiler.test.ts compares both paths byte for byte.
import { BlockTag, ForTag, IfTag, LayoutTag, Output, Tag, TypeGuards, type Liquid, type Template, type Value } from 'liquidjs';

/** A value or construct outside the subset: render this one through liquidjs. */
export class Unsupported extends Error {
  override name = 'Unsupported';
}

type Scope = { data: Record<string, unknown>; locals: Array<Record<string, unknown>> };
type Part = (scope: Scope, out: string[]) => void;
export type Compiled = (data: Record<string, unknown>) => string;

/** Compile-time refusal: the template is rendered by liquidjs only. */
class NotCompilable extends Error {}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };
const escape = (text: string) => text.replace(/&|<|>|"|'/g, (char) => ESCAPES[char]!);

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/** Names liquidjs puts in scope itself (`forloop`, `continue`, `block`): never looked up in the data. */
const RESERVED = new Set(['forloop', 'continue', 'block', 'tablerowloop']);
const PATH = /^[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*$/;

function lookup(scope: Scope, path: string[]): unknown {
  const [name, ...props] = path as [string, ...string[]];
  if (RESERVED.has(name)) throw new Unsupported(name);
  let value: unknown;
  const local = scope.locals.findLast((frame) => Object.hasOwn(frame, name));
  if (local) value = local[name];
  else if (Object.hasOwn(scope.data, name)) value = scope.data[name];
  else throw new Unsupported(name);
  for (const prop of props) {
    if ((Array.isArray(value) || typeof value === 'string') && prop === 'size') value = value.length;
    else if (isPlainObject(value) && Object.hasOwn(value, prop) && !['size', 'first', 'last'].includes(prop)) value = value[prop];
    else throw new Unsupported(prop);
    if (value === undefined || typeof value === 'function') throw new Unsupported(prop);
  }
  return checked(value);
}

function checked(value: unknown): unknown {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value) || Array.isArray(value) || isPlainObject(value)) return value;
  throw new Unsupported(typeof value);
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new Unsupported('output of a list or an object');
}

type Operand = (scope: Scope) => unknown;
const BLANK = Symbol('blank');

function operand(token: unknown): Operand | typeof BLANK {
  if (TypeGuards.isPropertyAccessToken(token) && PATH.test(token.getText())) {
    const path = token.getText().split('.');
    return (scope) => lookup(scope, path);
  }
  if (TypeGuards.isNumberToken(token) && /^-?\d+(\.\d+)?$/.test(token.getText())) {
    const number = Number(token.getText());
    return () => number;
  }
  if (TypeGuards.isLiteralToken(token) && token.getText() === 'blank') return BLANK;
  throw new NotCompilable();
}

function isBlank(value: unknown): boolean {
  if (value === false || value === null) return true;
  if (typeof value === 'string') return /^\s*$/.test(value);
  throw new Unsupported('blank of a list or an object');
}

const NUMERIC: Record<string, (left: number, right: number) => boolean> = {
  '>': (left, right) => left > right,
  '<': (left, right) => left < right,
  '>=': (left, right) => left >= right,
  '<=': (left, right) => left <= right,
};

/** An `if` condition: one operand (truthiness) or `a OP b`, no filters. */
function condition(value: Value): (scope: Scope) => boolean {
  if (value.filters.length > 0) throw new NotCompilable();
  const postfix = value.initial.postfix;
  if (postfix.length === 1) {
    const single = operand(postfix[0]);
    if (single === BLANK) throw new NotCompilable();
    return (scope) => {
      const result = single(scope);
      return result !== false && result !== null;
    };
  }
  if (postfix.length !== 3 || !TypeGuards.isOperatorToken(postfix[2])) throw new NotCompilable();
  const left = operand(postfix[0]);
  const right = operand(postfix[1]);
  const operator = postfix[2].getText();
  const numeric = NUMERIC[operator];
  if (numeric && left !== BLANK && right !== BLANK) {
    return (scope) => {
      const [a, b] = [left(scope), right(scope)];
      if (typeof a !== 'number' || typeof b !== 'number') throw new Unsupported('comparison of non-numbers');
      return numeric(a, b);
    };
  }
  if ((operator === '==' || operator === '!=') && (left === BLANK) !== (right === BLANK)) {
    const side = (left === BLANK ? right : left) as Operand;
    return operator === '==' ? (scope) => isBlank(side(scope)) : (scope) => !isBlank(side(scope));
  }
  throw new NotCompilable();
}

/** `blocks`: a child template's blocks, inside its layout; `inBlock`: a nested block is not compiled. */
type Context = { engine: Liquid; blocks?: Map<string, Part>; inBlock?: boolean };

function output(node: Output, context: Context): Part {
  const { initial, filters } = node.value;
  if (initial.postfix.length !== 1) throw new NotCompilable();
  const value = operand(initial.postfix[0]);
  if (value === BLANK) throw new NotCompilable();
  // liquidjs keeps a filter's function private; it is the only sure way to tell which filter it is.
  const handlerOf = (filter: unknown) => (filter as { handler?: unknown } | undefined)?.handler;
  const only = filters.length === 1 && filters[0]!.args.length === 0 ? filters[0]! : undefined;
  if (filters.length === 0 || (only?.raw && handlerOf(only) === handlerOf(context.engine.filters['raw']))) {
    return (scope, out) => void out.push(text(value(scope)));
  }
  if (only && handlerOf(only) === context.engine.filters['escape']) return (scope, out) => void out.push(escape(text(value(scope))));
  throw new NotCompilable();
}

function compileList(nodes: Template[], context: Context): Part {
  const parts = nodes.map((node) => compileNode(node, context));
  return (scope, out) => {
    for (const part of parts) part(scope, out);
  };
}

function compileNode(node: Template, context: Context): Part {
  if (node instanceof Output) return output(node, context);
  if (!(node instanceof Tag)) {
    const html = (node as { str?: unknown }).str;
    if (typeof html !== 'string') throw new NotCompilable();
    return (_scope, out) => void out.push(html);
  }
  if (node instanceof IfTag) {
    const branches = node.branches.map((branch) => ({ test: condition(branch.value), body: compileList(branch.templates, context) }));
    const otherwise = compileList(node.elseTemplates ?? [], context);
    return (scope, out) => {
      for (const branch of branches) if (branch.test(scope)) return branch.body(scope, out);
      otherwise(scope, out);
    };
  }
  if (node instanceof ForTag) {
    if (Object.keys(node.hash.hash).length > 0 || !TypeGuards.isPropertyAccessToken(node.collection)) throw new NotCompilable();
    const list = operand(node.collection);
    if (list === BLANK || RESERVED.has(node.variable)) throw new NotCompilable();
    const [body, otherwise, variable] = [compileList(node.templates, context), compileList(node.elseTemplates ?? [], context), node.variable];
    return (scope, out) => {
      const items = list(scope);
      if (!Array.isArray(items)) throw new Unsupported('for over something other than a list');
      if (items.length === 0) return otherwise(scope, out);
      for (const item of items) {
        scope.locals.push({ [variable]: checked(item) });
        try {
          body(scope, out);
        } finally {
          scope.locals.pop();
        }
      }
    };
  }
  if (node instanceof BlockTag) {
    if (!node.block || context.inBlock) throw new NotCompilable();
    const own = compileList(node.templates, { engine: context.engine, inBlock: true });
    return context.blocks?.get(node.block) ?? own;
  }
  throw new NotCompilable();
}

/** `{% layout 'file' %}` with named blocks: the layout's parts, with the child's blocks in place. */
function compileLayout(node: LayoutTag, context: Context): Part {
  if (typeof node.file !== 'string' || Object.keys(node.args.hash).length > 0) throw new NotCompilable();
  const blocks = new Map<string, Part>();
  for (const child of node.templates) {
    if (child instanceof BlockTag && child.block && !blocks.has(child.block)) {
      blocks.set(child.block, compileList(child.templates, { engine: context.engine, inBlock: true }));
    }
    else if (child instanceof Tag || child instanceof Output) throw new NotCompilable();
  }
  return compileList(context.engine.parseFileSync(node.file), { engine: context.engine, blocks });
}

/** The template as a function of its data, or undefined when it uses more than the subset. */
export function compileTemplate(engine: Liquid, templates: Template[]): Compiled | undefined {
  try {
    const parts = templates.map((node) => (node instanceof LayoutTag ? compileLayout(node, { engine }) : compileNode(node, { engine })));
    return (data) => {
      const out: string[] = [];
      const scope: Scope = { data, locals: [] };
      for (const part of parts) part(scope, out);
      return out.join('');
    };
  } catch (error) {
    if (error instanceof NotCompilable) return undefined;
    throw error;
  }
}
