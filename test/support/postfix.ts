// An isolated Postfix for a test file: its own configuration, queue and data directories under a
// temporary directory, SMTP on a free loopback port, mail to unknown users of its local domain
// accepted (250) and then bounced as a real DSN, and chosen domains relayed to loopback ports (the
// bounce receiver). The system's Postfix is never started; its main.cf only lists this instance's
// configuration directory while it runs, which `postfix -c` requires.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { sleep } from './sleep.ts';

const run = promisify(execFile);
/** Postfix passes some of its environment on to its daemons; it gets a plain one, not the test runner's. */
const POSTFIX_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };

export type PostfixOptions = {
  /** Postfix's own local domain: mail to unknown users here is accepted, then bounced as a DSN. */
  localDomain: string;
  /** Domains Postfix relays to an SMTP listener on 127.0.0.1, by port (the bounce domain → the receiver). */
  routes: Record<string, number>;
};

export type PostfixInstance = {
  /** What the workers' SMTP_URL points at. */
  url: string;
  port: number;
  /** Postfix's log so far, for failure messages. */
  log: () => string;
  stop: () => Promise<void>;
};

/** The postfix command, found (or installed) by the global setup; an Error that says why not. */
function postfixCommand(): string {
  const found = inject('testTools').postfix!;
  if (found.problem !== undefined) throw new Error(found.problem);
  if (process.getuid?.() !== 0) throw new Error('The Postfix tests need root: Postfix runs only when started by root (it then drops to its own user).');
  return found.path;
}

export async function startPostfix(options: PostfixOptions): Promise<PostfixInstance> {
  const postfix = postfixCommand();
  const postconf = path.join(path.dirname(postfix), 'postconf');
  const port = await freePort();
  const root = await mkdtemp(path.join(tmpdir(), 'cfs-postfix-'));
  // Postfix's own processes run as the postfix user and must reach the queue and data directories.
  await chmod(root, 0o755);
  const [config, queue, data] = ['config', 'queue', 'data'].map((name) => path.join(root, name)) as [string, string, string];
  await Promise.all([mkdir(config), mkdir(queue), mkdir(data)]);
  const { stdout: ids } = await run('id', ['-u', 'postfix']);
  const { stdout: gids } = await run('id', ['-g', 'postfix']);
  await chown(data, Number(ids.trim()), Number(gids.trim()));

  const routes = Object.entries(options.routes).map(([domain, target]) => `${domain}=smtp:[127.0.0.1]:${target}`);
  await writeFile(
    path.join(config, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${data}`,
      `myhostname = relay.${options.localDomain}`,
      `mydomain = ${options.localDomain}`,
      `myorigin = ${options.localDomain}`,
      `mydestination = ${options.localDomain}`,
      // Every recipient is accepted; an unknown local user is bounced after the 250, as a DSN.
      'local_recipient_maps =',
      'alias_maps =',
      'alias_database =',
      'inet_interfaces = loopback-only',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination',
      `transport_maps = inline:{ ${routes.join(', ')} }`,
      'disable_dns_lookups = yes',
      'smtp_host_lookup = native',
      'smtputf8_enable = no',
      'biff = no',
      // A route whose listener is down is retried within seconds, not minutes.
      'queue_run_delay = 1s',
      'minimal_backoff_time = 1s',
      'maximal_backoff_time = 2s',
      'delay_warning_time = 0h',
      // Postfix's log to its standard output, which script(1) below passes on to this process.
      'maillog_file = /dev/stdout',
      '',
    ].join('\n'),
  );
  await writeFile(path.join(config, 'master.cf'), isolatedMasterCf(await readFile('/etc/postfix/master.cf', 'utf8'), port));
  await listAlternate(postconf, config, true);

  let log = '';
  // Under the test runner, `postfix start-fg` without a terminal exits at once with status 1 and
  // logs nothing; script(1) (util-linux, on every Debian) gives it a pseudo-terminal. -e: its status.
  const child: ChildProcess = spawn('script', ['-qec', `${postfix} -c ${config} start-fg`, '/dev/null'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: POSTFIX_ENV,
  });
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
  child.once('error', (error) => (log += `${error.message}\n`));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      log += `postfix start-fg exited (${signal ?? `code ${code}`})\n`;
      resolve();
    }),
  );

  const stop = async () => {
    await run(postfix, ['-c', config, 'stop']).catch(() => undefined);
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
    await listAlternate(postconf, config, false);
    await rm(root, { recursive: true, force: true });
  };
  try {
    await waitForGreeting(port, 20_000, () => child.exitCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`Postfix did not start: ${(error as Error).message}\n${log}`, { cause: error });
  }
  return { url: `smtp://127.0.0.1:${port}`, port, log: () => log, stop };
}

/** The stock master.cf with SMTP on 127.0.0.1:port only and no chroot (its files are not set up). */
function isolatedMasterCf(stock: string, port: number): string {
  return stock
    .split('\n')
    .map((line) => {
      if (/^\s|^#|^$/.test(line)) return line;
      const fields = line.split(/\s+/);
      if (fields[0] === 'smtp' && fields[1] === 'inet') fields[0] = `127.0.0.1:${port}`;
      if (fields.length >= 8) fields[4] = 'n';
      return fields.join(' ');
    })
    .join('\n');
}

/** Adds or removes `dir` in the system main.cf's alternate_config_directories. */
async function listAlternate(postconf: string, dir: string, add: boolean): Promise<void> {
  const { stdout } = await run(postconf, ['-h', 'alternate_config_directories']);
  const listed = [
    ...stdout
      .split(/[\s,]+/)
      .filter(Boolean)
      .filter((entry) => entry !== dir),
    ...(add ? [dir] : []),
  ];
  // Nothing left to list: the parameter goes, as it was before the first instance.
  if (listed.length === 0) await run(postconf, ['-X', 'alternate_config_directories']);
  else await run(postconf, ['-e', `alternate_config_directories = ${listed.join(', ')}`]);
}

async function waitForGreeting(port: number, timeoutMs: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone()) throw new Error('the postfix process exited');
    const greeted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.setTimeout(1_000, () => socket.destroy());
      socket.once('data', (chunk: Buffer) => {
        socket.destroy();
        resolve(chunk.toString().startsWith('220'));
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
    });
    if (greeted) return;
    await sleep(200);
  }
  throw new Error(`no SMTP greeting on port ${port} within ${timeoutMs} ms`);
}
