// Summarises V8 CPU profiles (`npm run bench -- --profile` writes them to bench/profiles/):
// self time by package (or project directory) and the top functions.

//   node bench/profile-summary.ts bench/profiles/api-*.cpuprofile [--top=25]
import { readFileSync } from 'node:fs';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

const files = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const top = Number(process.argv.find((arg) => arg.startsWith('--top='))?.slice(6) ?? 25);
if (files.length === 0) {
  process.stderr.write('usage: node bench/profile-summary.ts <file.cpuprofile>... [--top=25]\n');
  process.exit(2);
}

/** Where a function lives: an npm package, a project directory, node's internals or V8 itself. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const project = /\/(src|bench|test)\/(.+)$/.exec(url);
  if (project) return `${project[1]}/${project[2]!.split('/').slice(0, -1).join('/') || project[2]}`;
  return url;
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  profile.samples.forEach((id, index) => {
    const node = nodes.get(id)!;
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') return;
    total += ms;
    const where = area(url, functionName);
    byArea.set(where, (byArea.get(where) ?? 0) + ms);
    const key = `${functionName || '(anonymous)'}  ${url.replace(/^file:\/\/.*?node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
  });
}

const show = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title} (self time, of ${total.toFixed(0)} ms busy)\n`);
  for (const [name, ms] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`  ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(7)} ms  ${name}\n`);
  }
};
show('By package / directory', byArea);
show('By function', byFunction);
