// Child processes of the local services: a start error that says what to do, free loopback
// ports, waiting for a server's ready line, and stopping children by PID (also on exit).
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export type LocalService = {
  name: string;
  /** The URL the service is reached at, in the form its environment variable takes. */
  url: string;
  stop: () => Promise<void>;
};

export const LOOPBACK = '127.0.0.1';

/** A local service that could not start: which one, the cause in the tool's own words, and what to do. */
export class ServiceStartError extends Error {
  readonly service: string;
  constructor(service: string, cause: string, remedy: string) {
    super(`${service} could not start: ${cause}\nWhat to do: ${remedy}`);
    this.name = 'ServiceStartError';
    this.service = service;
  }
}

export const causeOf = (error: unknown) => {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
};

/** Runs a start step, turning any failure into a ServiceStartError for that service. */
export async function starting<T>(service: string, remedy: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof ServiceStartError) throw error;
    throw new ServiceStartError(service, causeOf(error), remedy);
  }
}

// A port the kernel hands out for port 0, or as the local end of an outgoing connection, comes from
// its ephemeral range; one chosen there and bound seconds later can be taken meanwhile by any
// client connecting anywhere. Ports are therefore drawn at random below that range.
export const FREE_PORT_FLOOR = 20_000;

/** The lowest port of the kernel's ephemeral range (Linux), or the common default elsewhere. */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Listens on `port` (0: any) and closes again; the port it got, or undefined when it was taken. */
function tryPort(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' && port !== 0 ? resolve(undefined) : reject(error)));
    server.listen(port, LOOPBACK, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A loopback port nothing listens on, drawn below the kernel's ephemeral range where there is room. */
export async function freePort(): Promise<number> {
  const ceiling = ephemeralFloor();
  if (ceiling - FREE_PORT_FLOOR >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await tryPort(FREE_PORT_FLOOR + Math.floor(Math.random() * (ceiling - FREE_PORT_FLOOR)));
      if (port !== undefined) return port;
    }
  }
  const port = await tryPort(0);
  if (port === undefined) throw new Error('no free port');
  return port;
}

/** Waits for a line in a child's output, failing if the child exits first or the time runs out. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, name: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) done();
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(new Error(`${name} exited (${signal ? `killed by ${signal}` : `exit code ${code}`})${output ? `:\n${output.trim()}` : ' without output'}`));
    // A program that cannot be run at all (ENOENT, EACCES) emits 'error', not 'exit'.
    const onError = (error: NodeJS.ErrnoException) => fail(new Error(`${name} could not be run (${error.code ?? error.message})`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const done = () => {
      cleanup();
      resolve();
    };
    const fail = (error: Error) => {
      cleanup();
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', onExit);
    child.on('error', onError);
  });
}

/**
 * Server processes started here, with the signal that stops each cleanly. If this process exits
 * without stopping them (an interrupted test run), they are signalled on the way out: 'exit'
 * handlers run synchronously, and the servers then shut themselves down.
 */
const running = new Map<ChildProcess, NodeJS.Signals>();
/** Servers that fork workers of their own (rspamd): signalled as a whole process group. */
const groups = new Set<ChildProcess>();
process.on('exit', () => {
  for (const [child, signal] of running) signalChild(child, signal);
});

/** Signals the child, or its whole process group when it leads one of its own; no error if it is gone. */
export function signalChild(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (groups.has(child) && child.pid) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // already gone
  }
}

let ownProcessGroups = false;

/**
 * From now on, servers start in a process group of their own, out of reach of the terminal's Ctrl+C
 * (which signals the whole foreground group at once): `npm start` stops them itself, after the API
 * and the worker that still use them.
 */
export function startServersInOwnProcessGroups(): void {
  ownProcessGroups = true;
}

/** `ownGroup`: the child leads a process group of its own, and every signal goes to the group (its forked workers too). */
export function spawnTracked(
  stopSignal: NodeJS.Signals,
  command: string,
  args: readonly string[],
  options: SpawnOptions & { ownGroup?: boolean },
): ChildProcess {
  const { ownGroup = false, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, detached: ownProcessGroups || ownGroup });
  running.set(child, stopSignal);
  if (ownGroup) groups.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Stops a child by PID with a signal, escalating to SIGKILL if it outlives the grace period. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => signalChild(child, 'SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      // A group's forked workers may outlive its leader by a moment: they go with it.
      if (groups.has(child)) signalChild(child, 'SIGKILL');
      groups.delete(child);
      resolve();
    });
    signalChild(child, signal);
  });
}
