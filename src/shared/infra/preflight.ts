// The checks a process makes before it starts anything: each port it will listen on is free. A
// port that is taken ends the start with one line naming the setting, the port and, where Linux
// lets us read it (/proc/net/tcp and the holders' /proc/PID/fd), the program that holds it; exit
// 78 (EX_CONFIG), as for a bad setting, before a job is taken or a row is changed.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

export type PortNeed = { setting: string; host: string; port: number };

/** Why `host:port` cannot be listened on (EADDRINUSE, EACCES, …), or undefined when it can. */
export function portProblem(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  if (port === 0) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** The inodes of the sockets listening on `port` (any address), from the kernel's tables. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is the 10th field.
      const local = fields[1];
      if (!local || fields[3] !== '0A') continue;
      if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port && fields[9]) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** The program listening on `port`, as "PID n: command line", when /proc lets us see it. */
export function portHolder(port: number): string | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  const sockets = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process: not readable
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (sockets.has(target)) return `PID ${pid}: ${commandLine(Number(pid)) || 'unknown command'}`;
    }
  }
  return undefined;
}

/** A process's command line, shortened for one line of output; '' when it cannot be read. */
export function commandLine(pid: number): string {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    return command.length > 120 ? `${command.slice(0, 117)}...` : command;
  } catch {
    return '';
  }
}

/** The first port that cannot be listened on, as the line to show; undefined when all are free. */
export async function busyPort(needs: readonly PortNeed[]): Promise<string | undefined> {
  for (const { setting, host, port } of needs) {
    const problem = await portProblem(host, port);
    if (!problem) continue;
    const where = `${host}:${port}`;
    if (problem.code === 'EADDRINUSE') {
      const holder = portHolder(port);
      return `${setting}: port ${where} is already in use${holder ? ` by ${holder}` : ' by another program'}; stop it or set ${setting} to a free port.`;
    }
    if (problem.code === 'EACCES')
      return `${setting}: port ${where} needs root or CAP_NET_BIND_SERVICE (below 1024); set ${setting} to a port of 1024 or above.`;
    if (problem.code === 'EADDRNOTAVAIL') return `${setting}: ${host} is not an address of this machine; check it.`;
    return `${setting}: cannot listen on ${where}: ${problem.code ?? problem.message}.`;
  }
  return undefined;
}

/** For process entry points: a port that is taken ends the process, before it starts anything. */
export async function exitOnBusyPorts(needs: readonly PortNeed[]): Promise<void> {
  const line = await busyPort(needs);
  if (!line) return;
  process.stderr.write(`${line}\n`);
  process.exit(78); // EX_CONFIG, as for any other bad setting
}

/** Tells the process that started this one (npm start, over its IPC channel) that it listens and is ready. */
export function tellParentReady(): void {
  if (!process.send) return;
  process.send('ready');
  // The channel must not keep the process alive once its servers close.
  process.channel?.unref();
}
