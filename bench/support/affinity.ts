// CPU affinity for the one-core variant of scenario 1 (--one-core): the processes a side runs on (its
// API or floor, PostgreSQL with its backends, Redis) share CPU 0, and the load generator keeps to the
// other cores, so that a side's figures depend on one core's speed and not on how many cores there are.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** Sets the CPUs every thread of each process may run on (`taskset -a -p -c`); a process gone meanwhile is skipped. */
export function pin(pids: number[], cpus: string): void {
  for (const pid of pids) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
    } catch {
      // exited between listing and pinning
    }
  }
}

/** Every CPU of the machine, as taskset writes a list. */
export const allCpus = () => `0-${os.cpus().length - 1}`;
/** The CPUs left to the load generator when the side runs on CPU 0 (all of them on a one-core machine). */
export const otherCpus = () => (os.cpus().length > 1 ? `1-${os.cpus().length - 1}` : '0');
