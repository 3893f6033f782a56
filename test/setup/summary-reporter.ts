// Ends the run with one plain line, `tests: N passed, N failed[, N skipped]`, that CI tools read
// whatever the test runner.
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const count = (state: 'passed' | 'failed' | 'skipped') =>
      testModules.reduce((sum, module) => sum + [...module.children.allTests(state)].length, 0);
    const skipped = count('skipped');
    process.stdout.write(`\ntests: ${count('passed')} passed, ${count('failed')} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
