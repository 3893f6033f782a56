// Which version runs (src/shared/infra/version.ts), in small repositories of its own: a release is
// its "Release X.Y.Z" commit, found without any git tag; a build after it says how far and at which
// commit; a copy without git says "unknown" unless build-info.json, written at build time, says it.
// The commands that print it start programs: test/cli/version.test.ts.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeBuild, imageTag } from '../../../src/shared/infra/version.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function repository(): { dir: string; git: (...args: string[]) => string; commit: (subject: string) => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cfs-version-'));
  dirs.push(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q');
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ name: 'x', version: '1.2.0' })}\n`);
  const commit = (subject: string) => {
    writeFileSync(path.join(dir, 'change.txt'), subject);
    git('add', '.');
    git('commit', '-qm', subject);
  };
  return { dir, git, commit };
}

describe('the version', () => {
  it("is package.json's at its release commit, found by its message alone, with no tag", () => {
    const { dir, git, commit } = repository();
    commit('Start');
    commit('Release 1.2.0');
    expect(git('tag', '--list')).toBe('');
    expect(describeBuild(dir)).toEqual({ version: '1.2.0', commit: git('rev-parse', 'HEAD') });
  });

  it('after the release commit, counts the commits since and names the one built', () => {
    const { dir, git, commit } = repository();
    commit('Release 1.2.0');
    commit('Fix one thing');
    // A message that only mentions a release is not one.
    commit('Release 1.2.0 notes: typo');
    const short = git('rev-parse', '--short', 'HEAD');
    expect(describeBuild(dir)).toEqual({ version: `1.2.0+2.g${short}`, commit: git('rev-parse', 'HEAD') });
    expect(imageTag(`1.2.0+2.g${short}`)).toBe(`1.2.0_2.g${short}`);
  });

  it('without the release commit in the history (a shallow clone), says the distance is unknown', () => {
    const { dir, git, commit } = repository();
    commit('Start');
    expect(describeBuild(dir).version).toBe(`1.2.0+unknown.g${git('rev-parse', '--short', 'HEAD')}`);
  });

  it('without git, is read from build-info.json, else is unknown', () => {
    const { dir, commit } = repository();
    commit('Release 1.2.0');
    const copy = mkdtempSync(path.join(tmpdir(), 'cfs-version-copy-'));
    dirs.push(copy);
    cpSync(path.join(dir, 'package.json'), path.join(copy, 'package.json'));
    expect(describeBuild(copy)).toEqual({ version: '1.2.0+unknown', commit: 'unknown' });
    writeFileSync(path.join(copy, 'build-info.json'), JSON.stringify({ version: '1.2.0+3.gabc1234', commit: 'abc1234' }));
    expect(describeBuild(copy)).toEqual({ version: '1.2.0+3.gabc1234', commit: 'abc1234' });
  });
});
