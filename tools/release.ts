// `npm run release -- <major|minor|patch|x.y.z>`: bumps the version in package.json and
// package-lock.json, turns CHANGELOG.md's "Unreleased" into the version's dated section (a new empty
// "Unreleased" above it), sets the images' tag in deploy/ and docker-compose.yml to it, commits, and
// tags the commit vX.Y.Z (annotated); the commit's message, "Release X.Y.Z", is what marks the release
// when a clone has no tags (src/shared/infra/version.ts). docs/upgrading.md, "Releases".
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function nextVersion(current: string, bump: string): string {
  const [major, minor, patch] = current.split('.').map(Number) as [number, number, number];
  if (bump === 'major') return `${major + 1}.0.0`;
  if (bump === 'minor') return `${major}.${minor + 1}.0`;
  if (bump === 'patch') return `${major}.${minor}.${patch + 1}`;
  if (/^\d+\.\d+\.\d+$/.test(bump)) return bump;
  throw new Error(`not a version or major, minor, patch: ${bump}`);
}

// `contact-form-service:0.3.0` in deploy/, and docker-compose.yml's default for a build that was
// not given its version: `contact-form-service:${CFS_IMAGE_TAG:-0.3.0_unknown}`.
const IMAGES = /\b(contact-form-(?:service|rspamd):(?:\$\{CFS_IMAGE_TAG:-)?)\d+\.\d+\.\d+(?![\d.])/g;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? filesUnder(file) : /\.(ya?ml)$/.test(name) ? [file] : [];
  });
}

/** Cuts the release in the repository at `root`; returns the version. */
export function release(root: string, bump: string, today = new Date().toISOString().slice(0, 10)): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' });
  if (git('status', '--porcelain').trim() !== '') throw new Error('the working tree has changes: commit or drop them first');
  const packageFile = path.join(root, 'package.json');
  const pkg = JSON.parse(readFileSync(packageFile, 'utf8')) as { version: string };
  const version = nextVersion(pkg.version, bump);
  // A clone may have no tags: the release commit's message is what marks a release.
  if (git('tag', '--list', `v${version}`).trim() !== '' || git('log', '--format=%s', 'HEAD').split('\n').includes(`Release ${version}`))
    throw new Error(`${version} was released already`);
  const changelogFile = path.join(root, 'CHANGELOG.md');
  const changelog = readFileSync(changelogFile, 'utf8');
  const unreleased = /^## Unreleased\n([^]*?)(?=^## )/m.exec(changelog);
  if (!unreleased || unreleased[1]!.trim() === '') throw new Error('CHANGELOG.md has nothing under "## Unreleased"');
  writeFileSync(changelogFile, changelog.replace(/^## Unreleased\n/m, `## Unreleased\n\n## ${version} - ${today}\n`));
  pkg.version = version;
  writeFileSync(packageFile, `${JSON.stringify(pkg, null, 2)}\n`);
  const lockFile = path.join(root, 'package-lock.json');
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { version: string; packages: Record<string, { version?: string }> };
  lock.version = version;
  if (lock.packages['']) lock.packages[''].version = version;
  writeFileSync(lockFile, `${JSON.stringify(lock, null, 2)}\n`);
  for (const file of [...filesUnder(path.join(root, 'deploy')), path.join(root, 'docker-compose.yml'), path.join(root, 'docs/deploying.md')]) {
    const text = readFileSync(file, 'utf8');
    const tagged = text.replace(IMAGES, `$1${version}`);
    if (tagged !== text) writeFileSync(file, tagged);
  }
  git('commit', '-qam', `Release ${version}`);
  git('tag', '-a', `v${version}`, '-m', `Release ${version}`);
  return version;
}

if (import.meta.main) {
  const bump = process.argv[2];
  if (!bump) {
    process.stderr.write('Usage: npm run release -- <major|minor|patch|x.y.z>\n');
    process.exit(2);
  }
  try {
    const version = release(process.cwd(), bump);
    process.stdout.write(`v${version} committed and tagged; push with: git push --follow-tags\n`);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}
