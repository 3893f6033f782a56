// The previous release's own code, for the tests that run it beside this version's: found in git
// history by its "Release X.Y.Z" commit (tags do not always survive a clone), extracted with
// `git archive` into the system's temporary directory (kept per commit, so later runs reuse it; not
// under node_modules/, where Node refuses to run TypeScript), its dependencies installed by its own
// lock file, and its API or worker started as a process of its own from its tree, on its own Node
// (the `node` devDependency of that tree).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnService, type WorkerChild } from './workers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RELEASE_SUBJECT = /^Release (\d+\.\d+\.\d+)$/;
/** npm ci of the old tree: a cold cache on a busy machine takes minutes. */
export const INSTALL_TIMEOUT_MS = 10 * 60_000;

export type Release = { commit: string; version: string; root: string; node: string };

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/**
 * The newest "Release X.Y.Z" commit before HEAD (HEAD itself when it is one is this version, not the
 * previous). A clone without it (a shallow one) fails with what to run, rather than testing nothing.
 */
export function findPreviousRelease(): { commit: string; version: string } {
  const head = git('rev-parse', 'HEAD');
  const log = git('log', '--format=%H %s', '-E', '--grep=^Release [0-9]+\\.[0-9]+\\.[0-9]+$', 'HEAD');
  for (const line of log.split('\n')) {
    const [commit, ...words] = line.split(' ');
    const version = RELEASE_SUBJECT.exec(words.join(' '))?.[1];
    if (commit && version && commit !== head) return { commit, version };
  }
  const shallow = git('rev-parse', '--is-shallow-repository') === 'true';
  throw new Error(
    shallow
      ? 'this clone is shallow and holds no "Release X.Y.Z" commit before HEAD: run `git fetch --unshallow` to test against the previous release'
      : 'no "Release X.Y.Z" commit before HEAD in git history: nothing to test against',
  );
}

/** The previous release's tree, extracted and installed once per commit. */
export async function preparePreviousRelease(): Promise<Release> {
  const { commit, version } = findPreviousRelease();
  const root = path.join(tmpdir(), `cfs-release-${commit}`);
  if (!existsSync(root)) {
    // Built aside and renamed into place once installed: a tree that is there is whole, also when
    // another run prepares the same one meanwhile.
    const building = mkdtempSync(`${root}-`);
    try {
      const archive = path.join(building, 'release.tar');
      git('archive', '--format=tar', '-o', archive, commit);
      execFileSync('tar', ['-xf', archive, '-C', building]);
      rmSync(archive);
      await install(building);
      if (!existsSync(root)) renameSync(building, root);
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
  }
  const node = path.join(root, 'node_modules/.bin/node');
  return { commit, version, root, node: existsSync(node) ? node : process.execPath };
}

/** npm ci in `root`, quiet, bounded; its output is shown only when it fails. */
async function install(root: string): Promise<void> {
  // This run's npm settings (npm run sets npm_config_* for its scripts) are not the old tree's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  const child = spawn('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--prefer-offline'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
      reject(new Error(`npm ci of the previous release did not finish within ${INSTALL_TIMEOUT_MS / 60_000} min:\n${output}`));
    }, INSTALL_TIMEOUT_MS);
    child.once('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  if (code !== 0) throw new Error(`npm ci of the previous release exited with ${code}:\n${output}`);
}

/** The previous release's API, on a port of its own; its URL read from its "api listening" line. */
export async function spawnPreviousApi(release: Release, env: Record<string, string>): Promise<WorkerChild & { url: string }> {
  const api = await spawnService('src/api/main.ts', 'api listening', env, undefined, { cwd: release.root, node: release.node });
  const url = /"url":"(http:[^"]+)"/.exec(api.output())?.[1];
  if (!url) throw new Error(`the previous release's API printed no URL:\n${api.output()}`);
  return { ...api, url };
}

/** A worker of the previous release. */
export const spawnPreviousWorker = (release: Release, env: Record<string, string>) =>
  spawnService('src/workers/main.ts', 'worker ready', env, undefined, { cwd: release.root, node: release.node });
