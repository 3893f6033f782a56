// Module boundaries (docs/architecture.md, "Layout" and "The order of the features"): a feature's
// data modules are its own, other code calls the feature's service module; a feature imports only
// the features before it in the declared order; the infrastructure and the migrations import no
// feature; no module imports itself through a circle, and no feature does. It reads every source file's imports (TypeScript's
// pre-processor, so comments and strings never count) and needs no service.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The features of src/shared in their declared order: each may import those before it, never one
 * after it (type-only imports included). `words` holds the names other features' tables share and
 * imports nothing of the source; the infrastructure (src/shared/infra) comes below them all.
 */
const FEATURE_ORDER = [
  'words',
  'deliveries',
  'keys',
  'submissions',
  'files',
  'spam',
  'webhooks',
  'bounces',
  'recipients',
  'autoresponses',
  'owners',
  'visitors',
];

function sourceFiles(): string[] {
  return readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.posix.join('src', name.split(path.sep).join('/')))
    .sort();
}

/** Each source file's relative imports (type-only ones and `import()` included), as paths from the repository root. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles()) {
    const { importedFiles } = ts.preProcessFile(readFileSync(path.join(ROOT, file), 'utf8'), true, true);
    graph.set(
      file,
      importedFiles
        .map((imported) => imported.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => path.posix.normalize(path.posix.join(path.posix.dirname(file), name))),
    );
  }
  return graph;
}

/** The feature a file belongs to (`src/shared/<feature>/…`), the infrastructure excepted. */
function featureOf(file: string): string | undefined {
  const feature = /^src\/shared\/([^/]+)\//.exec(file)?.[1];
  return feature === 'infra' ? undefined : feature;
}

const isMigration = (file: string) => /(^|\/)migrations\//.test(file);

/** Every import circle: the strongly connected components of more than one file, or a file importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)!.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** `from → to` for every import of the graph that `breaks` says crosses a boundary. */
function crossings(graph: Map<string, string[]>, breaks: (from: string, to: string) => boolean): string[] {
  return [...graph].flatMap(([from, targets]) => targets.filter((to) => breaks(from, to)).map((to) => `${from} → ${to}`));
}

/** An import from a feature to one later in `order` (a feature not in it counts as later than all). */
function againstOrder(order: readonly string[]): (from: string, to: string) => boolean {
  const rank = (feature: string) => (order.includes(feature) ? order.indexOf(feature) : order.length);
  return (from, to) => {
    const [source, target] = [featureOf(from), featureOf(to)];
    return source !== undefined && target !== undefined && source !== target && rank(target) > rank(source);
  };
}

/** The graph of the features: an edge from each feature to every other feature it imports. */
function featureGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const features = new Map<string, Set<string>>();
  for (const [from, targets] of graph) {
    const source = featureOf(from);
    if (source === undefined) continue;
    const edges = features.get(source) ?? new Set<string>();
    features.set(source, edges);
    for (const target of targets.map(featureOf)) if (target !== undefined && target !== source) edges.add(target);
  }
  return new Map([...features].map(([feature, edges]) => [feature, [...edges].sort()]));
}

describe('module boundaries', () => {
  const graph = importGraph();

  it('reads the imports of the whole source', () => {
    // An empty or unresolved graph would pass every rule below for the wrong reason.
    expect(graph.get('src/workers/worker.ts')).toContain('src/shared/infra/queues/workers.ts');
  });

  it("imports a feature's data modules only from that feature", () => {
    const outside = crossings(graph, (from, to) => {
      const owner = /^src\/shared\/([^/]+)\/data\//.exec(to)?.[1];
      return owner !== undefined && owner !== featureOf(from);
    });
    expect(outside, "call the feature's service module (src/shared/<feature>/<feature>.ts) instead").toEqual([]);
  });

  it('places every feature of src/shared in the order', () => {
    expect([...featureGraph(graph).keys()].sort(), 'add a new feature to FEATURE_ORDER and to docs/architecture.md').toEqual([...FEATURE_ORDER].sort());
  });

  it('imports no feature later in the order', () => {
    expect(
      crossings(graph, againstOrder(FEATURE_ORDER)),
      'move the shared shape down to the feature that owns it (or into src/shared/words), or hand it in as a parameter',
    ).toEqual([]);
  });

  it('keeps the words free of the source', () => {
    const words = crossings(graph, (from, to) => featureOf(from) === 'words' && graph.has(to));
    expect(words, 'src/shared/words holds names only: it imports nothing of the source').toEqual([]);
  });

  it('has no circle between features', () => {
    expect(circles(featureGraph(graph))).toEqual([]);
  });

  it('the order check finds an import against the order', () => {
    const sample = new Map([
      ['src/shared/keys/keys.ts', ['src/shared/deliveries/deliveries.ts', 'src/shared/spam/spam-kinds.ts', 'src/shared/infra/log.ts']],
      ['src/shared/spam/spam-kinds.ts', []],
      ['src/shared/deliveries/deliveries.ts', ['src/shared/keys/keys.ts']],
    ]);
    expect(crossings(sample, againstOrder(['deliveries', 'keys', 'spam']))).toEqual([
      'src/shared/keys/keys.ts → src/shared/spam/spam-kinds.ts',
      'src/shared/deliveries/deliveries.ts → src/shared/keys/keys.ts',
    ]);
    expect(circles(featureGraph(sample))).toEqual([['deliveries', 'keys']]);
  });

  it('keeps the infrastructure free of features', () => {
    const infra = crossings(graph, (from, to) => from.startsWith('src/shared/infra/') && featureOf(to) !== undefined);
    expect(infra, 'hand policies and kinds to the infrastructure from the feature (a parameter), or move the code').toEqual([]);
  });

  it('keeps the migrations free of features', () => {
    const migrations = crossings(graph, (from, to) => isMigration(from) && featureOf(to) !== undefined);
    expect(migrations, 'a migration keeps a frozen copy of the feature code it needs').toEqual([]);
  });

  it('has no import circles', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('the circle finder finds a circle', () => {
    const sample = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts', 'd.ts']],
      ['e.ts', ['a.ts']],
    ]);
    expect(circles(sample)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['d.ts']]);
  });
});
