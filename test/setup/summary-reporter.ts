// Ends the run with one plain line, `tests: N passed, N failed[, N skipped]`, that CI tools read
// whatever the test runner. A file whose setup failed (a beforeAll that threw or timed out) leaves
// its tests unrun: they count as failed, not skipped, since nothing was skipped on purpose.
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const count = (modules: ReadonlyArray<TestModule>, state: 'passed' | 'failed' | 'skipped') =>
      modules.reduce((sum, module) => sum + [...module.children.allTests(state)].length, 0);
    // A failed file whose tests did not all run: its setup broke.
    const brokenFiles = testModules.filter((module) => module.state() === 'failed' && count([module], 'skipped') > 0);
    const unrun = count(brokenFiles, 'skipped');
    const failed = count(testModules, 'failed') + unrun;
    const skipped = count(testModules, 'skipped') - unrun;
    const files = brokenFiles.length ? ` (setup failed in ${brokenFiles.length} file(s): ${brokenFiles.map((module) => module.moduleId.split('/test/').pop()).join(', ')})` : '';
    process.stdout.write(`\ntests: ${count(testModules, 'passed')} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}${files}\n`);
  }
}
