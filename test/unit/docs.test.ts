// The documentation stays true to the code: the configuration page is the schema's, every
// variable the code reads is on it, and every relative link in the Markdown files leads somewhere.
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, renderConfigurationDoc } from '../../src/cli/config-doc.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

function filesUnder(dir: string, pattern: RegExp): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => pattern.test(name))
    .map((name) => path.join(dir, name));
}

/** Names in `env.NAME`, `env['NAME']` and `pathVariable: 'NAME'` (a variable naming a program). */
function variablesRead(source: string): string[] {
  const names = new Set<string>();
  for (const match of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]+)|\[['"]([A-Z][A-Z0-9_]+)['"]\])|pathVariable: ['"]([A-Z][A-Z0-9_]+)['"]/g)) {
    names.add((match[1] ?? match[2] ?? match[3])!);
  }
  return [...names];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^#{1,6} +(.+?) *#*$/.exec(line)?.[1];
    if (!heading) continue;
    const base = anchor(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const withoutFences = (markdown: string) => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** Code blocks and inline code hold examples, not links. */
const withoutCode = (markdown: string) => withoutFences(markdown).replace(/`[^`\n]*`/g, '');

function relativeLinks(markdown: string): string[] {
  const text = withoutCode(markdown);
  const links = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g), ...text.matchAll(/<img[^>]+src="([^"]+)"/g)].map((match) => match[1]!);
  return links.filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link));
}

function brokenLinks(file: string): string[] {
  const markdown = readFileSync(path.join(ROOT, file), 'utf8');
  return relativeLinks(markdown).flatMap((link) => {
    const [target = '', fragment] = link.split('#');
    const resolved = target ? path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(target)) : path.join(ROOT, file);
    if (!existsSync(resolved)) return [`${file}: ${link} (no such file)`];
    if (fragment === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) return [];
    return anchorsOf(readFileSync(resolved, 'utf8')).has(fragment) ? [] : [`${file}: ${link} (no such heading)`];
  });
}

const MARKDOWN = ['README.md', 'CHANGELOG.md', 'SECURITY.md', ...filesUnder('docs', /\.md$/)];

/** `docs/<page>.md`, with its `#anchor` if any, as messages, comments and configuration name a page. */
function pagesNamed(text: string): string[] {
  return [...text.matchAll(/\bdocs\/[\w-]+\.md(?:#[\w-]+)?/g)].map((match) => match[0]);
}

/** Code, tests, tools and deployment files: what they print or say points readers at these pages. */
const NAMING_PAGES = [
  ...filesUnder('src', /\.(ts|mjs)$/),
  ...filesUnder('test', /\.ts$/).filter((file) => file !== path.join('test', 'unit', 'docs.test.ts')),
  ...filesUnder('tools', /\.ts$/),
  ...filesUnder('bench', /\.ts$/),
  ...filesUnder('deploy', /\.(ya?ml|env)$/),
  ...filesUnder('rspamd', /\.(conf|inc|lua|local)$|Dockerfile$/),
  'docker-compose.yml',
  'Dockerfile',
];

describe('documentation', () => {
  it('docs/configuration.md is what npm run docs:config makes from the schema', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8'), 'run npm run docs:config').toBe(renderConfigurationDoc());
  });

  it('names every environment variable the code reads on docs/configuration.md', () => {
    const page = readFileSync(CONFIGURATION_DOC, 'utf8');
    // PATH is the system's program search path, read to find programs, not a setting of this service.
    const read = [...filesUnder('src', /\.(ts|mjs)$/), ...filesUnder('test/setup', /\.ts$/)]
      .flatMap((file) => variablesRead(readFileSync(path.join(ROOT, file), 'utf8')))
      .filter((name) => name !== 'PATH');
    expect(read).toContain('DATABASE_URL');
    expect(read).toContain('CHROMIUM_PATH');
    expect([...new Set(read)].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });

  it('finds the variables and links it checks in the shapes the code and the pages use', () => {
    expect(variablesRead("process.env.LOG_LEVEL; env['A_B']; { pathVariable: 'CHROMIUM_PATH' }")).toEqual(['LOG_LEVEL', 'A_B', 'CHROMIUM_PATH']);
    expect(pagesNamed('see docs/x.md#a-b, docs/y.md. (docs/z.md, "Scaling")')).toEqual(['docs/x.md#a-b', 'docs/y.md', 'docs/z.md']);
    expect(relativeLinks('[a](docs/x.md#y) [b](https://e.org) `[c](no.md)` <img src="docs/i.png">')).toEqual(['docs/x.md#y', 'docs/i.png']);
    expect([...anchorsOf('# Deploying with `docker compose`\n## Backups and restore\n## Backups and restore')]).toEqual([
      'deploying-with-docker-compose',
      'backups-and-restore',
      'backups-and-restore-1',
    ]);
  });

  it('every page that the code, the tests and the deployment files name exists, with the heading they name', () => {
    const broken = NAMING_PAGES.flatMap((file) =>
      pagesNamed(readFileSync(path.join(ROOT, file), 'utf8')).flatMap((named) => {
        const [page = '', fragment] = named.split('#');
        if (!existsSync(path.join(ROOT, page))) return [`${file}: ${named} (no such page)`];
        if (fragment === undefined) return [];
        return anchorsOf(readFileSync(path.join(ROOT, page), 'utf8')).has(fragment) ? [] : [`${file}: ${named} (no such heading)`];
      }),
    );
    expect(NAMING_PAGES).toContain(path.join('src', 'shared', 'infra', 'secret-check.ts'));
    expect(broken).toEqual([]);
  });

  it.each(MARKDOWN)('every relative link in %s resolves, anchors included', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });
});
