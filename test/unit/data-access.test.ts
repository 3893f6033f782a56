// SQL only in data-access modules (docs/architecture.md, "Data access"): every SQL statement and
// ORM call lives in a module under src/shared/<feature>/data/ or in the database infrastructure,
// and routes, job handlers, CLI commands and rules call its named functions. This reads every
// source file under src/ and names each query made anywhere else, by file and line. It needs no
// service: it parses the files (TypeScript's parser, so comments and strings never count).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Where queries belong: the data-access modules, the database infrastructure, the migrations, and the local PostgreSQL that `npm start` runs. */
const DATA_ACCESS = [/^src\/shared\/(.+\/)?data\//, /^src\/shared\/infra\/db\//, /(^|\/)migrations\//, /^src\/local\/postgres\.ts$/];

/** The EntityManager's methods that talk to the database (MikroORM). */
const ORM_METHODS = new Set([
  'find',
  'findOne',
  'findOneOrFail',
  'findAll',
  'findAndCount',
  'findByCursor',
  'count',
  'persist',
  'persistAndFlush',
  'flush',
  'insert',
  'insertMany',
  'upsert',
  'upsertMany',
  'nativeInsert',
  'nativeUpdate',
  'nativeDelete',
  'execute',
  'transactional',
  'begin',
  'commit',
  'rollback',
  'lock',
  'populate',
  'refresh',
  'createQueryBuilder',
  'qb',
  'getConnection',
  'getKysely',
]);
/** The names the code gives an EntityManager: `em`, `context.em`, a transaction's `tx` or `trx`. */
const MANAGER = new Set(['em', 'tx', 'trx']);
/** The names the code gives a pg pool, client or connection. */
const PG_HANDLE = /(client|pool|connection|conn|db)$/i;

type QueryCall = { line: number; code: string };

/** The name a receiver goes by: `em` for `em`, `context.em`, `em!`; `fork()` for `orm.em.fork()`. */
function receiverName(node: ts.Expression): string | undefined {
  if (ts.isNonNullExpression(node) || ts.isParenthesizedExpression(node)) return receiverName(node.expression);
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isPropertyAccessExpression(node)) return node.name.text;
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) return `${node.expression.name.text}()`;
  return undefined;
}

function isQuery(node: ts.Node): boolean {
  if (ts.isTaggedTemplateExpression(node)) return receiverName(node.tag) === 'sql';
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) return false;
  const method = node.expression.name.text;
  const receiver = receiverName(node.expression.expression);
  // execute() runs a statement whatever runs it: the EntityManager, its connection, a query builder.
  if (method === 'execute') return true;
  if (method === 'query') return receiver !== undefined && PG_HANDLE.test(receiver);
  return ORM_METHODS.has(method) && receiver !== undefined && (MANAGER.has(receiver) || receiver === 'fork()');
}

/** The lines of one file's source that make a query (1-based), each once, with the code of the first query on it. */
function queryCalls(source: string, fileName = 'source.ts'): QueryCall[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = new Map<number, QueryCall>();
  const visit = (node: ts.Node): void => {
    if (isQuery(node)) {
      const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
      if (!found.has(line)) found.set(line, { line, code: node.getText(file).split('\n')[0]!.trim().slice(0, 120) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return [...found.values()].sort((a, b) => a.line - b.line);
}

function sourceFiles(): string[] {
  return readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.posix.join('src', name.split(path.sep).join('/')))
    .sort();
}

describe('data access', () => {
  it('the detector finds queries and passes over ordinary code', () => {
    const source = [
      "import { SubmissionSchema } from './db/entities.ts';",
      'export async function handler(context: { em: EntityManager }, pool: pg.Pool, id: string) {',
      '  const rows = await context.em.find(SubmissionSchema, { id });', // 3
      "  await pool.query('select 1');", // 4
      '  const [row] = await context.em.execute<', // 5: the call starts here
      '    Array<{ n: number }>',
      "  >('select count(*)::int as n from submissions');",
      '  await orm.em.fork().transactional(async (tx) => {', // 8
      '    await tx.count(SubmissionSchema, {});', // 9
      '  });',
      '  const statement = sql`select 1`;', // 11
      '  const names = rows.map((item) => item.email).find((email) => email.endsWith(".org"));',
      '  // em.find(SubmissionSchema) in a comment is not a query',
      '  const text = \'em.execute("delete from submissions")\';',
      '  const search = new URLSearchParams(ctx.query).get("q");',
      '  return { names, row, text, search, statement };',
      '}',
    ].join('\n');
    expect(queryCalls(source).map((call) => call.line)).toEqual([3, 4, 5, 8, 9, 11]);
  });

  it('runs SQL and ORM calls only in data-access modules', () => {
    const files = sourceFiles();
    // The walk found the source: an empty list would pass for the wrong reason.
    expect(files).toContain('src/workers/delivery/send.ts');
    const outside: string[] = [];
    for (const file of files) {
      if (DATA_ACCESS.some((pattern) => pattern.test(file))) continue;
      for (const call of queryCalls(readFileSync(path.join(ROOT, file), 'utf8'), file)) outside.push(`${file}:${call.line}  ${call.code}`);
    }
    expect(outside, 'queries outside the data-access modules: move each into a function of src/shared/<feature>/data/').toEqual([]);
  });
});
