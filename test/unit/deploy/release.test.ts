// `npm run release` (tools/release.ts), cut in a temporary clone of this repository's release
// files: the version, the CHANGELOG section, the images' tags, the commit and the annotated tag.
// And in the repository itself, the images' tags follow package.json's version.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nextVersion, release } from '../../../tools/release.ts';
import { describeBuild } from '../../../src/shared/infra/version.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function clone(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cfs-release-'));
  dirs.push(dir);
  for (const file of ['package.json', 'package-lock.json', 'CHANGELOG.md', 'docker-compose.yml', 'deploy', 'docs'])
    cpSync(path.join(ROOT, file), path.join(dir, file), { recursive: true });
  // A change waiting for its release, whatever the repository's own "Unreleased" holds today.
  const changelog = path.join(dir, 'CHANGELOG.md');
  writeFileSync(changelog, readFileSync(changelog, 'utf8').replace(/^## Unreleased\n/m, '## Unreleased\n\n### Fixed\n- A change waiting for its release.\n'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' });
  git('init', '-q');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.test', 'add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.test', 'commit', '-qm', 'start');
  git('config', 'user.name', 'Releaser');
  git('config', 'user.email', 'releaser@example.test');
  return dir;
}

const imageTags = (root: string) => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => (statSync(path.join(dir, name)).isDirectory() ? files(path.join(dir, name)) : [path.join(dir, name)]));
  return [...files(path.join(root, 'deploy')), path.join(root, 'docker-compose.yml')].flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/\bcontact-form-(?:service|rspamd):([^\s"]+)/g)].map((match) => match[1]!),
  );
};
/** docker-compose.yml's tag for a build not given its version: the release's, marked unknown. */
const UNLABELLED = /^\$\{CFS_IMAGE_TAG:-(\d+\.\d+\.\d+)_unknown\}$/;
const releaseOf = (tag: string) => UNLABELLED.exec(tag)?.[1] ?? tag;

describe('npm run release', () => {
  it('bumps by semver', () => {
    expect(nextVersion('0.2.0', 'patch')).toBe('0.2.1');
    expect(nextVersion('0.2.3', 'minor')).toBe('0.3.0');
    expect(nextVersion('0.2.3', 'major')).toBe('1.0.0');
    expect(nextVersion('0.2.3', '0.4.0')).toBe('0.4.0');
    expect(() => nextVersion('0.2.3', 'next')).toThrow(/not a version/);
  });

  it('commits the new version everywhere and tags it', () => {
    const dir = clone();
    const before = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    const version = release(dir, 'minor', '2026-12-01');
    expect(version).toBe(nextVersion(before, 'minor'));
    expect((JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version).toBe(version);
    const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as { version: string; packages: Record<string, { version: string }> };
    expect([lock.version, lock.packages['']!.version]).toEqual([version, version]);
    const changelog = readFileSync(path.join(dir, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(new RegExp(`## Unreleased\\n\\n## ${version.replaceAll('.', '\\.')} - 2026-12-01\\n`));
    expect(new Set(imageTags(dir).map(releaseOf))).toEqual(new Set([version]));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    expect(git('status', '--porcelain')).toBe('');
    expect(git('log', '-1', '--format=%s')).toBe(`Release ${version}`);
    expect(git('cat-file', '-t', `v${version}`)).toBe('tag');
    expect(git('rev-parse', `v${version}^{commit}`)).toBe(git('rev-parse', 'HEAD'));
    // Nothing released since: a second release has nothing to say.
    expect(() => release(dir, 'patch')).toThrow(/nothing under "## Unreleased"/);
  });

  it('works in a clone without tags: the release commit is found by its message, and not cut twice', () => {
    const dir = clone();
    const version = release(dir, 'minor', '2026-12-01');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    git('tag', '-d', `v${version}`);
    expect(describeBuild(dir)).toEqual({ version, commit: git('rev-parse', 'HEAD') });
    const changelog = path.join(dir, 'CHANGELOG.md');
    writeFileSync(changelog, readFileSync(changelog, 'utf8').replace(/^## Unreleased\n/m, '## Unreleased\n\n### Fixed\n- Another change.\n'));
    git('commit', '-qam', 'Another change');
    expect(describeBuild(dir).version).toBe(`${version}+1.g${git('rev-parse', '--short', 'HEAD')}`);
    // The same version again, by number, is refused although its tag is gone.
    expect(() => release(dir, version)).toThrow(`${version} was released already`);
    expect(git('log', '-1', '--format=%s')).toBe('Another change');
  });
});

describe('the images in deploy/ and docker-compose.yml', () => {
  it("are tagged with package.json's version", () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(new Set(imageTags(ROOT).map(releaseOf))).toEqual(new Set([version]));
  });

  it('built by docker compose without the version, are not labelled as the release', () => {
    const compose = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    const tags = [...compose.matchAll(/\bcontact-form-(?:service|rspamd):([^\s"]+)/g)].map((match) => match[1]!);
    expect(tags.length).toBe(2);
    for (const tag of tags) expect(tag).toMatch(UNLABELLED);
  });
});
