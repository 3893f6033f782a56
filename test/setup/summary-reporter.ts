// Ends the run with one plain line, `tests: N passed, N failed[, N skipped]`, that CI tools read
// whatever the test runner. A test that was meant to run (mode run or only) but did not, because
// a beforeAll of its file or suite threw or timed out, counts as failed, not skipped; only tests
// skipped on purpose (skip, todo, or left out by a filter) count as skipped.
import type { Reporter, TestCase, TestModule } from 'vitest/node';

const unrun = (test: TestCase) => test.result().state === 'skipped' && (test.options.mode === 'run' || test.options.mode === 'only');

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]) {
    const tests = testModules.flatMap((module) => [...module.children.allTests()]);
    const passed = tests.filter((test) => test.result().state === 'passed').length;
    const failed = tests.filter((test) => test.result().state === 'failed' || unrun(test)).length;
    const skipped = tests.filter((test) => test.result().state === 'skipped' && !unrun(test)).length;
    const brokenFiles = [...new Set(tests.filter(unrun).map((test) => test.module))];
    const files = brokenFiles.length
      ? ` (setup failed in ${brokenFiles.length} file(s): ${brokenFiles.map((module) => module.moduleId.split('/test/').pop()).join(', ')})`
      : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${files}\n`);
  }
}
