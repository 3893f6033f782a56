// What an API process remembers of unconfirmed mailboxes: a held mailbox stays known as held until
// the clock hour ends, then PostgreSQL is asked again (the next hour has a fresh allowance).
import { describe, expect, it } from 'vitest';
import { createConsentMemory } from '../../../src/api/submissions/consent-memory.ts';

const HOUR = 3_600_000;

describe('consent memory', () => {
  it('knows a held mailbox until the end of the clock hour, and only that mailbox', () => {
    let now = 10 * HOUR + 59 * 60_000; // 10:59
    const memory = createConsentMemory(() => now);
    expect(memory.knownHeld('a@example.org')).toBe(false);
    memory.rememberHeld('a@example.org');
    expect(memory.knownHeld('a@example.org')).toBe(true);
    expect(memory.knownHeld('b@example.org')).toBe(false);
    now = 11 * HOUR - 1; // 10:59:59.999
    expect(memory.knownHeld('a@example.org')).toBe(true);
    now = 11 * HOUR; // 11:00, a new allowance
    expect(memory.knownHeld('a@example.org')).toBe(false);
    memory.rememberHeld('a@example.org');
    expect(memory.knownHeld('a@example.org')).toBe(true);
  });
});
