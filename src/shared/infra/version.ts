// The version of the running code, for the banner, /readyz, the metrics, `npm run admin -- version`
// and the User-Agent of outgoing posts. A release is package.json's version; a build from another
// commit says how far it is from the release commit: `0.3.0+12.g671a9e5` (12 commits after the
// commit "Release 0.3.0", at 671a9e5). Git tags are not used: a clone may have none.
// Where there is no git (an image, a copy), build-info.json, written at build time, says it;
// without either the version reads `0.3.0+unknown`.
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

export type BuildInfo = { version: string; commit: string };

export const BUILD_INFO_FILE = 'build-info.json';
const ROOT = path.resolve(import.meta.dirname, '../../..');
const VERSION_FORMAT = /^\d+\.\d+\.\d+(?:\+[0-9A-Za-z.-]+)?$/;

export const isVersion = (value: string) => VERSION_FORMAT.test(value);

/** The release's version and the commits since its release commit, read from `root` (the repository). */
export function describeBuild(root = ROOT): BuildInfo {
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  // Git first: in a checkout, a build-info.json left from an earlier build would be out of date.
  return fromGit(root, version) ?? written(root) ?? { version: `${version}+unknown`, commit: 'unknown' };
}

function written(root: string): BuildInfo | undefined {
  let info: Partial<BuildInfo>;
  try {
    info = JSON.parse(readFileSync(path.join(root, BUILD_INFO_FILE), 'utf8')) as Partial<BuildInfo>;
  } catch {
    return undefined;
  }
  return typeof info.version === 'string' && isVersion(info.version)
    ? { version: info.version, commit: typeof info.commit === 'string' ? info.commit : 'unknown' }
    : undefined;
}

function fromGit(root: string, version: string): BuildInfo | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  let head: string;
  try {
    // Only this repository's own history: a copy unpacked inside another repository has none.
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== realpathSync(root)) return undefined;
    head = git('rev-parse', '--verify', 'HEAD');
  } catch {
    return undefined; // no git, or not a repository
  }
  const short = git('rev-parse', '--short', 'HEAD');
  const subject = `Release ${version}`;
  const release = git('log', '--format=%H %s', `--grep=^${subject.replaceAll('.', '\\.')}$`, 'HEAD')
    .split('\n')
    .find((line) => line.slice(41) === subject)
    ?.slice(0, 40);
  // A shallow clone may not reach the release commit: how far it is, is unknown.
  if (!release) return { version: `${version}+unknown.g${short}`, commit: head };
  const since = Number(git('rev-list', '--count', `${release}..HEAD`));
  return { version: since === 0 ? version : `${version}+${since}.g${short}`, commit: head };
}

let current: BuildInfo | undefined;

/** This process's version, computed on first use and kept. */
export function buildInfo(): BuildInfo {
  return (current ??= describeBuild());
}

/** An image tag may not hold `+`: `0.3.0+12.g671a9e5` is tagged `0.3.0_12.g671a9e5`. */
export const imageTag = (version: string) => version.replace('+', '_');
