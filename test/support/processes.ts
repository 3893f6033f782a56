// Process helpers for tests that run the service's own commands.
import { readdirSync, readFileSync } from 'node:fs';

/** Every live descendant of a process, read from /proc. */
export function descendants(rootPid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: fields resume after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we read.
    }
  }
  const found: number[] = [];
  const queue = [rootPid];
  while (queue.length) {
    for (const child of parents.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * How long a test waits for `npm start` to print its banner. A first start on a fresh machine or
 * account runs initdb and has rspamd compile its rules, which takes far longer while the machine is
 * busy with other tests.
 */
export const NPM_START_BANNER_WAIT_MS = 90_000;

/** A test's time limit: the banner wait of each start it makes, and a minute for the rest. */
export const npmStartTestTimeout = (starts: number) => starts * NPM_START_BANNER_WAIT_MS + 60_000;
