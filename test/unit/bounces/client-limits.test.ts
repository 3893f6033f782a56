// What one client address may cost the bounce receiver: connections open at once, and messages a
// minute (past them it answers 421 and 451, and a relay retries).
import { describe, expect, it } from 'vitest';
import { ClientLimits } from '../../../src/bounces/client-limits.ts';

const MINUTE = 60_000;

describe('connections from one address', () => {
  it('are refused past the maximum, and another address still connects', () => {
    const limits = new ClientLimits(2, 100);
    expect([limits.connect('192.0.2.1'), limits.connect('192.0.2.1'), limits.connect('192.0.2.1')]).toEqual([true, true, false]);
    expect(limits.connect('192.0.2.2')).toBe(true);
  });

  it('are admitted again once one closes; a refused one frees no place', () => {
    const limits = new ClientLimits(1, 100);
    expect(limits.connect('192.0.2.1')).toBe(true);
    expect(limits.connect('192.0.2.1')).toBe(false);
    expect(limits.connect('192.0.2.1')).toBe(false);
    limits.disconnect('192.0.2.1');
    expect(limits.connect('192.0.2.1')).toBe(true);
    expect(limits.connect('192.0.2.1')).toBe(false);
  });
});

describe('messages from one address', () => {
  it('are refused past the allowance of the minute, then allowed again in the next minute', () => {
    const limits = new ClientLimits(10, 3);
    const start = 100 * MINUTE;
    expect([1, 2, 3, 4].map((second) => limits.message('192.0.2.1', start + second * 1000))).toEqual([true, true, true, false]);
    expect(limits.message('192.0.2.2', start + 5_000)).toBe(true);
    expect(limits.message('192.0.2.1', start + MINUTE)).toBe(true);
  });
});
