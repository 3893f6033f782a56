// The unit tier starts no service and reaches none: a unit test that opens a socket, listens on a
// port or runs a program fails here, saying so, instead of passing only on a machine where the
// service happens to run. What needs a server belongs in the integration tier (the other folders
// of test/, with the harness of test/support/harness.ts).
import { ChildProcess } from 'node:child_process';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const refuse = (what: string) => () => {
  throw new Error(`a unit test may not ${what}: test/unit/ starts no service; put this test in the integration tier`);
};

net.Socket.prototype.connect = refuse('open a network connection') as never;
net.Server.prototype.listen = refuse('listen on a port') as never;
// Every asynchronous way to start a program goes through ChildProcess's spawn; the synchronous ones
// are replaced on the module, and the named imports of it follow (syncBuiltinESMExports).
(ChildProcess.prototype as unknown as { spawn: unknown }).spawn = refuse('start a program');
const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
for (const name of ['spawnSync', 'execSync', 'execFileSync']) childProcess[name] = refuse('start a program');
syncBuiltinESMExports();
