// `npm run admin -- version` and `npm run build-info` print this checkout's version (the rules of
// which: test/unit/infra/version.test.ts). They start programs, so they are not in the unit tier.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeBuild, imageTag } from '../../src/shared/infra/version.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the commands', () => {
  const npm = (...args: string[]) => execFileSync('npm', ['run', '--silent', ...args], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH } });

  it("`npm run admin -- version` prints this checkout's version and commit, with no setting", () => {
    const { version, commit } = describeBuild(ROOT);
    expect(npm('admin', '--', 'version')).toBe(`${version} (commit ${commit})\n`);
  });

  it('`npm run build-info` prints what an image build takes as arguments', () => {
    const { version, commit } = describeBuild(ROOT);
    expect(npm('build-info')).toBe(`${version}\n`);
    expect(npm('build-info', '--', 'env')).toBe(`CFS_VERSION=${version}\nCFS_COMMIT=${commit}\nCFS_IMAGE_TAG=${imageTag(version)}\n`);
  });
});
