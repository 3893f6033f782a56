import { defineConfig } from 'vitest/config';

// Two tiers, each a vitest project. `unit`: the rules without I/O (test/unit/), no service
// started, and a guard (test/setup/no-services.ts) that fails a test which opens a socket, listens
// on a port or starts a program beside it. `integration`: everything else, against the real servers
// its global setup starts. A project's global setup runs only when one of its files is selected,
// so `npm run test:unit` (and `npm test -- test/unit/`) starts nothing. Reporters are the run's,
// not a project's: the summary line counts both tiers.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    // expect.poll waits for what a page shows next; its default second is too short for a browser on a busy machine.
    expect: { poll: { timeout: 15_000 } },
    reporters: ['default', './test/setup/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          isolate: false,
          setupFiles: ['test/setup/no-services.ts'],
          // A rule that parses every source file, or runs git, takes seconds, and several times that beside two busy loops.
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: ['test/unit/**'], globalSetup: ['test/setup/global.ts'] },
      },
    ],
  },
});
