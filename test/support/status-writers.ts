// Finds the code that writes a delivery status (email_status), so that a test can check it is only
// where it should be. It reads TypeScript as written: the SQL of its string literals and templates
// (a `${NAME}` of a string constant of the same file spelled out, and both branches of a
// `${a ? 'x' : 'y'}`; any other `${...}` is a value it cannot read), and the ORM's writes of the
// `emailStatus` property.
import ts from 'typescript';

export type StatusWrite = { line: number; what: string };

/** The SQL texts of a source file, with where each starts. */
function sqlTexts(file: ts.SourceFile): Array<{ node: ts.Node; text: string }> {
  const constants = new Map<string, ts.Expression>();
  const texts: Array<{ node: ts.Node; text: string }> = [];
  const textOf = (node: ts.Expression, depth: number): string => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (!ts.isTemplateExpression(node)) return ' ? ';
    return node.head.text + node.templateSpans.map((span) => spanText(span.expression, depth) + span.literal.text).join('');
  };
  const spanText = (expression: ts.Expression, depth: number): string => {
    if (depth >= 5) return ' ? ';
    // `${a ? 'x' : 'y'}`: both branches, one after the other (an optional column is still written).
    if (ts.isConditionalExpression(expression)) return `${spanText(expression.whenTrue, depth + 1)} ${spanText(expression.whenFalse, depth + 1)}`;
    if (isText(expression)) return textOf(expression, depth + 1);
    const constant = ts.isIdentifier(expression) ? constants.get(expression.text) : undefined;
    return constant ? textOf(constant, depth + 1) : ' ? ';
  };
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && isText(node.initializer))
      constants.set(node.name.text, node.initializer);
    ts.forEachChild(node, visit);
  };
  visit(file);
  const collect = (node: ts.Node): void => {
    if (isText(node)) texts.push({ node, text: textOf(node, 0) });
    ts.forEachChild(node, collect);
  };
  collect(file);
  return texts;
}

const isText = (node: ts.Node): node is ts.StringLiteral | ts.NoSubstitutionTemplateLiteral | ts.TemplateExpression =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);

const WORD = /[a-z_][a-z0-9_]*/y;

/**
 * The assignments of the `set` list that starts at `start`: split at the commas outside brackets
 * and case … end, up to the `from`, `where` or `returning` that ends the list.
 */
function setList(sql: string, start: number): string[] {
  const items: string[] = [];
  let depth = 0;
  let itemStart = start;
  let i = start;
  while (i < sql.length) {
    const char = sql[i]!;
    if (char === "'") {
      i = sql.indexOf("'", i + 1) + 1 || sql.length;
      continue;
    }
    if (/[a-z_]/.test(char) && !/[a-z0-9_.]/.test(sql[i - 1] ?? ' ')) {
      WORD.lastIndex = i;
      const word = WORD.exec(sql)![0];
      if (word === 'case') depth++;
      else if (word === 'end') depth--;
      else if (depth === 0 && (word === 'from' || word === 'where' || word === 'returning')) break;
      i += word.length;
      continue;
    }
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ';' && depth === 0) break;
    else if (char === ',' && depth === 0) {
      items.push(sql.slice(itemStart, i));
      itemStart = i + 1;
    }
    i++;
  }
  items.push(sql.slice(itemStart, i));
  return items;
}

const NAMES_STATUS = /(^|[^a-z0-9_])email_status([^a-z0-9_]|$)/;

/** What in one SQL text writes email_status: an update's assignment, an insert's column, a call of a function that writes it. */
export function sqlWrites(text: string, writingFunctions: readonly string[] = []): string[] {
  const sql = text.toLowerCase().replace(/"/g, '');
  const found: string[] = [];
  // An update, or an insert's `on conflict … do update`.
  for (const update of sql.matchAll(/\b(?:do\s+update|update\s+(?:only\s+)?\S+(?:\s+(?:as\s+)?(?!set\b)[a-z_]\w*)?)\s+set\b/g)) {
    const assigned = setList(sql, update.index + update[0].length).flatMap((item) => (item.includes('=') ? [item.slice(0, item.indexOf('='))] : []));
    if (assigned.some((column) => NAMES_STATUS.test(column))) found.push('update … set email_status');
  }
  for (const insert of sql.matchAll(/\binsert\s+into\s+\S+(?:\s+as\s+[a-z_]\w*)?\s*\(([^)]*)\)/g)) {
    if (NAMES_STATUS.test(insert[1]!)) found.push('insert … (email_status)');
  }
  for (const name of writingFunctions) if (new RegExp(`\\b${name}\\s*\\(`).test(sql)) found.push(`${name}(…), which writes email_status`);
  return found;
}

/** The ORM calls that write entities: an `emailStatus` in their data writes a status. */
const ORM_WRITES = new Set(['create', 'assign', 'insert', 'insertMany', 'nativeInsert', 'nativeUpdate', 'upsert', 'upsertMany', 'update']);

function ormWrites(file: ts.SourceFile): StatusWrite[] {
  const found: StatusWrite[] = [];
  const line = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const namesStatus = (name: ts.PropertyName | undefined) =>
    name !== undefined && (ts.isIdentifier(name) || ts.isStringLiteral(name)) && name.text === 'emailStatus';
  const visit = (node: ts.Node): void => {
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
      ts.isPropertyAccessExpression(node.left) &&
      node.left.name.text === 'emailStatus'
    ) {
      found.push({ line: line(node), what: 'entity.emailStatus = …' });
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ORM_WRITES.has(node.expression.name.text)) {
      for (const argument of node.arguments) {
        if (ts.isObjectLiteralExpression(argument) && argument.properties.some((property) => namesStatus(property.name))) {
          found.push({ line: line(node), what: `${node.expression.name.text}({ emailStatus })` });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Every write of email_status in `source`. */
export function statusWrites(fileName: string, source: string, writingFunctions: readonly string[] = []): StatusWrite[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const line = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const found = sqlTexts(file).flatMap(({ node, text }) => sqlWrites(text, writingFunctions).map((what) => ({ line: line(node), what })));
  return [...found, ...ormWrites(file)].sort((a, b) => a.line - b.line);
}

/** The database functions created by `source` (a migration) whose body writes email_status. */
export function functionsWritingStatus(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  return sqlTexts(file).flatMap(({ text }) => {
    const name = /\bcreate\s+(?:or\s+replace\s+)?function\s+"?([a-z_]\w*)"?/i.exec(text)?.[1];
    return name && sqlWrites(text).length > 0 ? [name.toLowerCase()] : [];
  });
}
