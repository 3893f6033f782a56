// The worker's send slots: a submission email past its spam check waits for one, so however many
// jobs a worker runs, at most WORKER_CONCURRENCY of them have files open or talk SMTP.
import { describe, expect, it } from 'vitest';
import { createSendSlots } from '../../src/workers/send-slots.ts';

describe('send slots', () => {
  it('lets as many through as there are slots; the next waits for one to be given back, once', async () => {
    const slots = createSendSlots(2);
    const first = await slots.take();
    await slots.take();
    let thirdIn = false;
    const third = slots.take().then((release) => {
      thirdIn = true;
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(thirdIn).toBe(false);
    first();
    // Given back twice by mistake: still one slot, so a fourth waits.
    first();
    await third;
    expect(thirdIn).toBe(true);
    let fourthIn = false;
    void slots.take().then(() => (fourthIn = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fourthIn).toBe(false);
  });
});
