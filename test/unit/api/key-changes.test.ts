// The API process forgets its cached keys after every change it makes to what a cached key carries,
// so its next submission sees the change at once (src/api/keys/key-changes.ts). That holds only
// while every route changes keys, webhook endpoints and consent through that module: this reads
// every file under src/api and names any other that imports one of those changes itself.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const THROUGH = 'src/api/keys/key-changes.ts';
/** The changes of src/shared that alter a cached key: its settings, its endpoints, its mailbox's consent. */
const KEY_CHANGES = new Set([
  'updateKey',
  'updateKeySettings',
  'createEndpoint',
  'createChatChannel',
  'setEndpointEnabled',
  'deleteEndpoint',
  'confirmMailbox',
  'releaseHeld',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

function importedChanges(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  for (const statement of source.statements) {
    const bindings = ts.isImportDeclaration(statement) ? statement.importClause?.namedBindings : undefined;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) {
      const name = (element.propertyName ?? element.name).text;
      if (KEY_CHANGES.has(name)) found.push(`${file}: ${name}`);
    }
  }
  return found;
}

describe('key changes in the API', () => {
  it('go through src/api/keys/key-changes.ts, which forgets the cached keys', () => {
    const elsewhere = sourceFiles('src/api')
      .filter((file) => file !== THROUGH)
      .flatMap(importedChanges);
    expect(elsewhere).toEqual([]);
  });
});
