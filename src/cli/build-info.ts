// `npm run -s build-info [-- commit|tag|env|write [VERSION [COMMIT]]]`: the version of this checkout,
// for building images where git cannot run (docs/upgrading.md, "Which version runs").
//   (none)  the version: 0.3.0 for a release commit, 0.3.0+12.g671a9e5 for a build after it
//   commit  the commit's hash
//   tag     the version as an image tag (no `+`): 0.3.0_12.g671a9e5
//   env     CFS_VERSION, CFS_COMMIT and CFS_IMAGE_TAG lines, for docker compose's build
//   write   writes build-info.json (the version given, else this checkout's), read at start instead of git
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUILD_INFO_FILE, buildInfo, imageTag, isVersion } from '../shared/infra/version.ts';

const [command, ...args] = process.argv.slice(2);
const info = buildInfo();
if (command === undefined) process.stdout.write(`${info.version}\n`);
else if (command === 'commit') process.stdout.write(`${info.commit}\n`);
else if (command === 'tag') process.stdout.write(`${imageTag(info.version)}\n`);
else if (command === 'env') process.stdout.write(`CFS_VERSION=${info.version}\nCFS_COMMIT=${info.commit}\nCFS_IMAGE_TAG=${imageTag(info.version)}\n`);
else if (command === 'write' && args.length <= 2 && (args[0] === undefined || isVersion(args[0]))) {
  const written = args[0] ? { version: args[0], commit: args[1] || 'unknown' } : info;
  writeFileSync(path.resolve(import.meta.dirname, '../..', BUILD_INFO_FILE), `${JSON.stringify(written)}\n`);
  process.stdout.write(`${BUILD_INFO_FILE}: ${written.version} (${written.commit})\n`);
} else {
  process.stderr.write('Usage: npm run -s build-info [-- commit|tag|env|write [X.Y.Z[+BUILD] [COMMIT]]]\n');
  process.exit(2);
}
