// Several hosts on one machine, for the tests of partitions between hosts: a network namespace per
// host with one address on a private bridge (iproute2: `ip netns`, veth pairs, a bridge). The
// bridge lives in a namespace of its own; the test's own process joins it through one veth pair, so
// the servers it runs (SMTP sink, S3) are reachable from the hosts. The hosts have no route but
// their subnet: their traffic cannot leave the namespaces made here. Needs root.
import { spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { inject } from 'vitest';
import { spawnTracked } from '../../src/local/processes.ts';
import { isAlive } from './processes.ts';

/** Every name made here starts with this, followed by the test process's PID. */
const PREFIX = 'cfs-part-';
/** The test process's end of its veth pair, in the initial namespace: `cfsp<pid>` (at most 15 bytes). */
const selfLink = (pid: number) => `cfsp${pid}`;

export type Host = {
  name: string;
  /** The network namespace that is this host. */
  namespace: string;
  address: string;
};

export type Network<Name extends string> = {
  /** The test process's own address on the bridge. */
  self: string;
  hosts: Record<Name, Host>;
  /** Takes the host's cable out: its packets and those sent to it are dropped, nothing is refused. */
  cut: (name: Name) => void;
  /** Plugs the cable back in. */
  heal: (name: Name) => void;
  /** Drops every packet between two hosts, both ways, while each still reaches the others. */
  cutBetween: (a: Name, b: Name) => void;
  healBetween: (a: Name, b: Name) => void;
  /** Runs a program on a host (`ip netns exec`: the child's PID is the program's). */
  spawn: (name: Name, command: string, args: string[], options?: SpawnOptions) => ChildProcess;
  /** Ends every process left on the hosts and deletes the namespaces, the bridge and the veths. */
  remove: () => void;
};

/** `ip`, found (or installed) by the global setup, and root: the reason when either is missing. */
function ipCommand(): string {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'The partition tests need root: they make network namespaces, veth pairs and a bridge (ip netns, ip link), which only root may do. Run them as root, e.g. `sudo npm test -- test/faults/partitions.test.ts`.',
    );
  }
  const found = inject('testTools').ip!;
  if (found.problem !== undefined) throw new Error(found.problem);
  return found.path;
}

function run(ip: string, args: string[], { mayFail = false } = {}): string {
  const result = spawnSync(ip, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
  if (!mayFail && result.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${(result.stderr || result.error?.message || '').trim()}`);
  return result.stdout ?? '';
}

/** SIGKILL to each process still in a namespace made here (the test started them all). */
function killProcessesIn(ip: string, namespace: string): void {
  for (const pid of run(ip, ['netns', 'pids', namespace], { mayFail: true })
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Namespaces and links of runs that ended without their clean-up (a killed test process). */
function removeLeftovers(ip: string): void {
  for (const line of run(ip, ['netns', 'list'], { mayFail: true }).split('\n')) {
    const namespace = line.split(' ')[0] ?? '';
    const pid = Number(namespace.slice(PREFIX.length).split('-')[0]);
    if (!namespace.startsWith(PREFIX) || !(pid > 0) || isAlive(pid)) continue;
    killProcessesIn(ip, namespace);
    run(ip, ['netns', 'delete', namespace], { mayFail: true });
  }
  for (const match of run(ip, ['-o', 'link', 'show'], { mayFail: true }).matchAll(/^\d+: (cfsp(\d+))[@:]/gm)) {
    if (!isAlive(Number(match[2]))) run(ip, ['link', 'delete', match[1]!], { mayFail: true });
  }
}

/** A /24 of 10.213.0.0/16 that no address or route of this machine's namespace touches. */
function freeSubnet(ip: string): string {
  const used = run(ip, ['-4', '-o', 'addr', 'show']) + run(ip, ['-4', 'route', 'show', 'table', 'all']);
  for (let attempt = 0; attempt < 50; attempt++) {
    const subnet = `10.213.${randomInt(1, 255)}`;
    if (!used.includes(`${subnet}.`)) return subnet;
  }
  throw new Error('no free /24 in 10.213.0.0/16 for the test hosts');
}

/**
 * Makes one namespace per name, each with the address `<subnet>.<octet>` on the bridge, and joins
 * the test process to it at `<subnet>.1`. Removed on `remove()`, and at the latest when this process
 * exits.
 */
export function createNetwork<Name extends string>(octets: Record<Name, number>): Network<Name> {
  const ip = ipCommand();
  removeLeftovers(ip);
  const id = `${PREFIX}${process.pid}`;
  const switchNamespace = `${id}-switch`;
  const link = selfLink(process.pid);
  const subnet = freeSubnet(ip);
  const names = Object.keys(octets) as Name[];
  const hosts = Object.fromEntries(
    names.map((name) => [name, { name, namespace: `${id}-${name}`, address: `${subnet}.${octets[name]}` }]),
  ) as unknown as Record<Name, Host>;
  const port = (name: Name) => `p-${name}`.slice(0, 15);
  const namespaces = [switchNamespace, ...names.map((name) => hosts[name].namespace)];

  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    for (const namespace of namespaces) killProcessesIn(ip, namespace);
    for (const namespace of namespaces) run(ip, ['netns', 'delete', namespace], { mayFail: true });
    // Deleting its peer's namespace deletes a veth, but later: take ours now.
    run(ip, ['link', 'delete', link], { mayFail: true });
  };
  process.once('exit', remove);

  try {
    for (const namespace of namespaces) run(ip, ['netns', 'add', namespace]);
    run(ip, ['-n', switchNamespace, 'link', 'add', 'name', 'br0', 'type', 'bridge']);
    run(ip, ['-n', switchNamespace, 'link', 'set', 'br0', 'up']);
    for (const name of names) {
      const { namespace, address } = hosts[name];
      run(ip, ['-n', switchNamespace, 'link', 'add', 'name', port(name), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace]);
      run(ip, ['-n', switchNamespace, 'link', 'set', port(name), 'master', 'br0', 'up']);
      run(ip, ['-n', namespace, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
      run(ip, ['-n', namespace, 'link', 'set', 'eth0', 'up']);
      run(ip, ['-n', namespace, 'link', 'set', 'lo', 'up']);
    }
    run(ip, ['link', 'add', 'name', link, 'type', 'veth', 'peer', 'name', 'p-self', 'netns', switchNamespace]);
    run(ip, ['-n', switchNamespace, 'link', 'set', 'p-self', 'master', 'br0', 'up']);
    run(ip, ['addr', 'add', `${subnet}.1/24`, 'dev', link]);
    run(ip, ['link', 'set', link, 'up']);
  } catch (error) {
    remove();
    throw error;
  }

  // A neighbour entry that sends the peer's packets to a MAC address nobody has: the bridge drops
  // them, silently, as a broken path does. (This kernel has no netfilter or tc classifiers to drop
  // them by address; a neighbour entry is iproute2 alone.)
  const NOWHERE = '02:00:00:00:00:01';
  const pointNeighbour = (from: Name, to: Name, lladdr: string) =>
    run(ip, ['-n', hosts[from].namespace, 'neigh', 'replace', hosts[to].address, 'lladdr', lladdr, 'dev', 'eth0', 'nud', 'permanent']);
  const forgetNeighbour = (from: Name, to: Name) =>
    run(ip, ['-n', hosts[from].namespace, 'neigh', 'delete', hosts[to].address, 'dev', 'eth0'], { mayFail: true });

  return {
    self: `${subnet}.1`,
    hosts,
    cut: (name) => void run(ip, ['-n', switchNamespace, 'link', 'set', port(name), 'down']),
    heal: (name) => void run(ip, ['-n', switchNamespace, 'link', 'set', port(name), 'up']),
    cutBetween(a, b) {
      pointNeighbour(a, b, NOWHERE);
      pointNeighbour(b, a, NOWHERE);
    },
    healBetween(a, b) {
      // Forgotten, the neighbour is looked up again (ARP) at the next packet.
      forgetNeighbour(a, b);
      forgetNeighbour(b, a);
    },
    spawn: (name, command, args, options = {}) => spawnTracked('SIGTERM', ip, ['netns', 'exec', hosts[name].namespace, command, ...args], options),
    remove,
  };
}
