// Process helpers for tests that run the service's own commands.
import type { ChildProcess } from 'node:child_process';
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
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * How long a test waits for `npm start` to print its banner. A first start on a fresh machine or
 * account runs initdb and has rspamd compile its rules, which takes far longer while the machine is
 * busy with other tests.
 */
/**
 * The processes a test file spawns, and those they start in process groups of their own: all
 * killed (SIGKILL, by PID or process group) by `killAll`, and on the way out of an interrupted run,
 * which skips afterAll.
 */
export function processTracker(): { spawned: ChildProcess[]; startedPids: number[]; killAll: () => void } {
  const spawned: ChildProcess[] = [];
  const startedPids: number[] = [];
  const killQuietly = (pid: number) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone: the next one must still be killed
    }
  };
  const killAll = () => {
    for (const child of spawned) if (child.exitCode === null && child.pid) killQuietly(-child.pid);
    for (const pid of startedPids.splice(0)) if (isAlive(pid)) killQuietly(pid);
  };
  process.once('exit', killAll);
  return { spawned, startedPids, killAll };
}

export const NPM_START_BANNER_WAIT_MS = 90_000;

/** A test's time limit: the banner wait of each start it makes, and a minute for the rest. */
export const npmStartTestTimeout = (starts: number) => starts * NPM_START_BANNER_WAIT_MS + 60_000;
