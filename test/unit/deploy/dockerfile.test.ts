// The Dockerfile, read as text (no Docker engine, no build): the image runs the sources as
// deployed, as an unprivileged user, with its compile cache filled, from a build context without
// local state. test/compose.test.ts checks docker-compose.yml, which builds it.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe('Dockerfile', () => {
  it('runs the sources on Node 24 as the unprivileged node user, with production dependencies only', async () => {
    const dockerfile = await readFile(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:24[-\w.]*\s*$/m);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(dockerfile).toMatch(/^USER node\s*$/m);
    expect(dockerfile).toMatch(/^ENV NODE_ENV=production\s*$/m);
    expect(dockerfile).toMatch(/^EXPOSE 3000\s*$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\/healthz/ms);
    expect(dockerfile).toMatch(/^CMD \["node", "--import=\.\/src\/shared\/infra\/compile-cache\.mjs", "src\/api\/main\.ts"\]\s*$/m);
  });

  it('fills the compile cache at build time as the user that runs the processes (its entries are per user id)', async () => {
    const dockerfile = await readFile(path.join(ROOT, 'Dockerfile'), 'utf8');
    const user = dockerfile.search(/^USER node\s*$/m);
    const fill = dockerfile.search(
      /^RUN for entry in src\/api\/main\.ts src\/workers\/main\.ts src\/bounces\/main\.ts;[^]*--import=\.\/src\/shared\/infra\/compile-cache\.mjs/m,
    );
    expect(user).toBeGreaterThan(0);
    expect(fill).toBeGreaterThan(user);
  });

  it('takes the version as build arguments (the build has no git) and writes it where the processes read it', async () => {
    const dockerfile = await readFile(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ARG VERSION=""\s*$/m);
    expect(dockerfile).toMatch(/^ARG COMMIT=""\s*$/m);
    const write = dockerfile.search(/^RUN if \[ -n "\$VERSION" \]; then node src\/cli\/build-info\.ts write "\$VERSION" "\$COMMIT"; fi\s*$/m);
    expect(write).toBeGreaterThan(dockerfile.search(/^COPY src \.\/src\s*$/m));
    expect(write).toBeLessThan(dockerfile.search(/^USER node\s*$/m));
  });

  it('keeps local state and dependencies out of the build context', async () => {
    const ignored = (await readFile(path.join(ROOT, '.dockerignore'), 'utf8')).split('\n').map((line) => line.trim());
    for (const entry of ['node_modules', '.data', '.git', 'test', 'coverage', '.env']) expect(ignored, entry).toContain(entry);
  });
});
