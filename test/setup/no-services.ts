// The unit tier starts no service and reaches none: a unit test that opens a socket, listens on a
// port or starts a program that runs beside it fails here, saying so, instead of passing only on a
// machine where the service happens to run. What needs a server belongs in the integration tier
// (the other folders of test/, with the harness of test/support/harness.ts). A program run to its
// end (execFileSync, spawnSync: a static check calling git, say) starts no service and is allowed.
import { ChildProcess } from 'node:child_process';
import net from 'node:net';

const refuse = (what: string) => () => {
  throw new Error(`a unit test may not ${what}: test/unit/ starts no service; put this test in the integration tier`);
};

net.Socket.prototype.connect = refuse('open a network connection');
net.Server.prototype.listen = refuse('listen on a port') as never;
// spawn, exec, execFile and fork all start their program through ChildProcess's spawn.
(ChildProcess.prototype as unknown as { spawn: unknown }).spawn = refuse('start a program beside it');
