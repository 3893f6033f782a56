// System programs that `npm start` and the tests need and that npm cannot ship (redis-server,
// chromium, docker-compose): found on PATH (or where an environment variable points), installed
// with apt-get when this is Debian or Ubuntu as root, and otherwise named with the command that
// installs them. Production never imports this module.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';

export type SystemTool = {
  /** The program's name on PATH. */
  binary: string;
  /** The Debian/Ubuntu package that provides it. */
  package: string;
  /** What needs it, for the message when it is missing. */
  neededFor: string;
  /** An environment variable that names the program's path instead of PATH. */
  pathVariable?: string;
  /** Another way out, for the message when it is missing (e.g. "or set REDIS_URL to ..."). */
  alternative?: string;
  /**
   * The system services the package starts when installed (Debian starts pgbouncer's on port 6432,
   * clamav-daemon's clamd and freshclam): stopped and disabled right after the install made here,
   * since only the tests' own instances are wanted. systemd units by name (`x.socket` for a
   * socket unit, which would start its service again on the first connection).
   */
  systemServices?: readonly string[];
};

/** Chromium, for what runs a headless browser (the browser tests, a benchmark, the screenshots). */
export const chromiumTool = (neededFor: string): SystemTool => ({ binary: 'chromium', package: 'chromium', neededFor, pathVariable: 'CHROMIUM_PATH' });

export type ToolLookup = { path: string; problem?: undefined } | { path?: undefined; problem: string };

/** A program that is missing: what and why (`reason`), and the command that installs it (`remedy`). */
export class MissingToolError extends Error {
  readonly reason: string;
  readonly remedy: string;
  constructor(reason: string, remedy: string) {
    super(`${reason}\nWhat to do: ${remedy}`);
    this.name = 'MissingToolError';
    this.reason = reason;
    this.remedy = remedy;
  }
}

const isExecutable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

function onPath(binary: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(':')) {
    const file = `${dir || '.'}/${binary}`;
    if (dir && isExecutable(file)) return file;
  }
  return undefined;
}

function find(tool: SystemTool, env: NodeJS.ProcessEnv): string | undefined {
  const chosen = tool.pathVariable ? env[tool.pathVariable] : undefined;
  if (chosen) return isExecutable(chosen) ? chosen : undefined;
  return onPath(tool.binary, env);
}

function missing(tool: SystemTool, env: NodeJS.ProcessEnv, installCause: string): MissingToolError {
  const chosen = tool.pathVariable ? env[tool.pathVariable] : undefined;
  const what = chosen ? `${tool.pathVariable}=${chosen} is not an executable file` : `${tool.binary} is not installed (not found on PATH)`;
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return new MissingToolError(
    `${what}; it is needed for ${tool.neededFor}.${installCause ? ` ${installCause}` : ''}`,
    `install the ${tool.package} package (Debian/Ubuntu: \`${sudo}apt-get install -y ${tool.package}\`)` +
      (chosen ? ` and unset ${tool.pathVariable}, or point ${tool.pathVariable} at ${tool.binary}` : '') +
      (tool.alternative ? `, ${tool.alternative}` : '') +
      ', then run the command again.',
  );
}

/** A spawnSync output as text: null (whatever Node's types say) when the command could not start or the stream was not piped. */
function textOf(output: string | Buffer | null | undefined): string {
  return output == null ? '' : output.toString();
}

/** The cause of a failed spawnSync in the tool's own words: the spawn error code or the exit status, and its output. */
export function spawnFailure(command: string, result: ReturnType<typeof spawnSync>): string {
  const error: NodeJS.ErrnoException | undefined = result.error;
  const how = error ? (error.code ?? error.message) : result.signal ? `killed by ${result.signal}` : `exit code ${result.status}`;
  const output = `${textOf(result.stdout)}${textOf(result.stderr)}`.trim();
  return `${command} failed (${how})${output ? `:\n${output}` : ''}`;
}

/** Stops and disables the services a package started, on systemd or a SysV init; nothing when there is neither. */
function stopSystemServices(services: readonly string[], options: Parameters<typeof spawnSync>[2]): void {
  if (existsSync('/run/systemd/system')) spawnSync('systemctl', ['disable', '--now', ...services], options);
  else if (onPath('service', process.env)) {
    // A SysV init has no socket units.
    for (const service of services.filter((name) => !name.endsWith('.socket'))) spawnSync('service', [service, 'stop'], options);
  }
}

/**
 * Finds each tool, installing the missing ones in one apt-get run when this is Debian or Ubuntu as
 * root (never upgrading what is installed). A tool still missing gets the error that says what is
 * missing, why, and the command that installs it.
 */
function findOrInstall(tools: SystemTool[], env: NodeJS.ProcessEnv): Map<SystemTool, string | MissingToolError> {
  const found = new Map(tools.map((tool) => [tool, find(tool, env)]));
  // A path chosen through an environment variable is the user's choice: installing would not change it.
  const installable = tools.filter((tool) => !found.get(tool) && !(tool.pathVariable && env[tool.pathVariable]));
  let cause = '';
  if (installable.length) {
    const packages = [...new Set(installable.map((tool) => tool.package))];
    if (process.getuid?.() !== 0) cause = 'It can be installed automatically only as root.';
    else if (!existsSync('/etc/debian_version')) cause = 'It can be installed automatically only on Debian or Ubuntu.';
    else {
      process.stderr.write(`Installing ${packages.join(', ')} with apt-get (missing, and needed here)...\n`);
      const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
      const options = { env: aptEnv, encoding: 'utf8' as const, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
      const update = spawnSync('apt-get', ['update', '-qq'], options);
      const install = spawnSync('apt-get', ['install', '-y', '-qq', '--no-upgrade', '--no-install-recommends', ...packages], options);
      for (const tool of installable) found.set(tool, find(tool, env));
      if (install.status === 0) for (const tool of installable) if (tool.systemServices) stopSystemServices(tool.systemServices, options);
      cause =
        install.status !== 0
          ? `The automatic install did not work: ${spawnFailure('apt-get install', install)}`
          : `apt-get installed ${packages.join(', ')}, but the program is still not on PATH.`;
      if (update.status !== 0) cause += `\n(${spawnFailure('apt-get update', update)})`;
    }
  }
  return new Map(tools.map((tool) => [tool, found.get(tool) ?? missing(tool, env, cause)]));
}

/** Each tool's path, or the message that says how to install it (see findOrInstall), by binary name. */
export function ensureSystemTools(tools: SystemTool[], env: NodeJS.ProcessEnv = process.env): Record<string, ToolLookup> {
  return Object.fromEntries(
    [...findOrInstall(tools, env)].map(([tool, found]) => [tool.binary, typeof found === 'string' ? { path: found } : { problem: found.message }]),
  );
}

/** A tool's path when it is there (on PATH or where its variable points); never installs it. */
export function findSystemTool(tool: SystemTool, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return find(tool, env);
}

/** One tool's path; a MissingToolError when it is missing and could not be installed. */
export function requireSystemTool(tool: SystemTool, env: NodeJS.ProcessEnv = process.env): string {
  const found = findOrInstall([tool], env).get(tool)!;
  if (typeof found !== 'string') throw found;
  return found;
}
