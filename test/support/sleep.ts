// The tests' one pause. A test does not sleep to let something happen and then look: it waits for
// the event that makes the outcome certain (`eventually` in harness.ts, a process's exit, a row's
// final status, a later message). What sleeps remain pace something on purpose (a slow client's
// bytes, a load spread over a window, a poll's interval, an outage held for a while), each with its
// reason beside it. test/unit/test-waits.test.ts keeps this the only one.
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
