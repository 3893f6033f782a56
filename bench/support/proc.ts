// Child processes of the benchmark and what /proc says about them: every child is registered so
// that a normal end, an error, SIGINT/SIGTERM or the hard deadline stops it by its PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stopChild } from '../../src/local/services.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');

type Stoppable = { name: string; stop: () => Promise<void>; pid?: number | undefined };
const running = new Set<Stoppable>();

/** Registers something to stop at the end (or on a signal); returns the unregister function. */
export function track(item: Stoppable): () => void {
  running.add(item);
  return () => running.delete(item);
}

/** Stops everything still registered, last started first. */
export async function stopAll(): Promise<void> {
  for (const item of [...running].reverse()) {
    running.delete(item);
    await item.stop().catch(() => undefined);
  }
}

/** Last resort when the process is leaving anyway: SIGKILL every tracked PID, synchronously. */
export function killAllNow(): void {
  for (const item of running) {
    if (item.pid) {
      try {
        process.kill(item.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

export type Child = {
  name: string;
  child: ChildProcess;
  pid: number;
  /** The last lines the child wrote, for error messages. */
  output: () => string;
  /** The first warning or error it logged (pino level ≥ 40), with how many there were. */
  problems: () => { first: string; count: number } | undefined;
  stop: () => Promise<void>;
};

export type SpawnOptions = {
  name: string;
  script: string;
  args?: string[];
  env: Record<string, string>;
  /** Resolves once a line of the output matches. */
  readyPattern?: RegExp;
  ipc?: boolean;
  nodeArgs?: string[];
  timeoutMs?: number;
};

/** Spawns `node <script>` from the project root and waits for its ready line. */
export async function spawnNode(options: SpawnOptions): Promise<Child> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
  });
  let tail = '';
  let first: string | undefined;
  let count = 0;
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    tail = (tail + text).slice(-8_000);
    for (const line of text.split('\n')) {
      if (!/"level":(4|5|6)0/.test(line)) continue;
      count += 1;
      first ??= line.slice(0, 400);
    }
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = () => stopChild(child, 'SIGTERM', 20_000);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name} could not be started`);
  const untrack = track({ name: options.name, stop, pid });
  child.once('exit', () => untrack());
  const handle: Child = {
    name: options.name,
    child,
    pid,
    output: () => tail,
    problems: () => (first ? { first, count } : undefined),
    stop,
  };
  if (options.readyPattern) {
    const pattern = options.readyPattern;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`${options.name} did not start in time:\n${tail}`)), options.timeoutMs ?? 30_000);
      const check = () => {
        if (pattern.test(tail)) finish();
      };
      const onExit = (code: number | null) => fail(new Error(`${options.name} exited with ${code}:\n${tail}`));
      const finish = () => {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        child.off('exit', onExit);
        resolve();
      };
      const fail = (error: Error) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        void stop().finally(() => reject(error));
      };
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      child.once('exit', onExit);
      check();
    });
  }
  return handle;
}

/** Resident set size of a process in bytes (VmRSS), or 0 when it is gone. */
export function rssBytes(pid: number): number {
  return statusField(pid, 'VmRSS');
}

/** Peak resident set size since the last resetPeakRss (VmHWM). */
export function peakRssBytes(pid: number): number {
  return statusField(pid, 'VmHWM');
}

/** Resets VmHWM to the current RSS (Linux: "5" into clear_refs). Returns whether that worked. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function statusField(pid: number, field: string): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/**
 * CPU time (user + system) a process has used so far, in ms. With `exitedChildren`, plus that of
 * its children that have exited and been reaped (cutime + cstime): added to its live children's
 * `cpuMs`, the total only grows, since a child that exits between two snapshots (an autovacuum
 * worker, a closed connection's backend) moves its time from the children's sum to this one
 * instead of dropping out of it.
 */
export function cpuMs(pid: number, { exitedChildren = false } = {}): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    const own = fields[11]! + fields[12]!;
    return (exitedChildren ? own + fields[13]! + fields[14]! : own) * TICK_MS;
  } catch {
    return 0;
  }
}

/** The PIDs of a process's direct children. */
export function childPids(pid: number): number[] {
  try {
    const found: number[] = [];
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
      if (task) found.push(Number(task));
    }
    return found;
  } catch {
    return [];
  }
}

/** Whole-machine CPU counters, to tell how busy all cores were over an interval. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  const total = values.reduce((sum, value) => sum + value, 0);
  return { busy: total - idle, total };
}

/** Share of all cores busy between two machineCpu() readings, 0..1. */
export function busyShare(before: ReturnType<typeof machineCpu>, after: ReturnType<typeof machineCpu>): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : 0;
}

/** Samples the RSS of a process until stopped; returns the peak seen. */
export function sampleRss(pid: number, everyMs = 20): { stop: () => number } {
  let peak = rssBytes(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssBytes(pid));
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits for the first IPC message of a type from a child. */
export function waitForMessage<T extends { type: string }>(child: Child, type: string, timeoutMs = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${child.name}: no "${type}" message in time:\n${child.output()}`)), timeoutMs);
    const onMessage = (message: T | null) => {
      if (message?.type === type) done(undefined, message);
    };
    const onExit = (code: number | null) => done(new Error(`${child.name} exited with ${code}:\n${child.output()}`));
    const done = (error?: Error, message?: T) => {
      clearTimeout(timer);
      child.child.off('message', onMessage);
      child.child.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    };
    child.child.on('message', onMessage);
    child.child.once('exit', onExit);
  });
}
