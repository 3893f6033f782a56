// GET /metrics of a process without an HTTP API of its own (a worker, the bounce receiver), for
// Prometheus, behind the operator token like the API's: queue depths and delivery counts are not
// for anyone who can reach the port.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { tokenCheck } from './bearer-token.ts';
import { registry } from './metrics.ts';

/**
 * `alive`, when given, answers GET /livez without a token (a kubelet sends none): 200 while the
 * process does its work, 503 when it is stuck. An event loop that is blocked answers nothing at all.
 */
export async function serveMetrics(host: string, port: number, adminToken: string, alive?: () => Promise<boolean>): Promise<Server> {
  const carriesToken = tokenCheck(adminToken);
  const server = createServer((req, res) => {
    if (req.url === '/livez' && alive) {
      alive().then(
        (ok) => res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'alive\n' : 'stuck: jobs wait and none was taken\n'),
        () => res.writeHead(200).end('alive\n'),
      );
      return;
    }
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    if (!carriesToken(req.headers.authorization)) {
      res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  server.listen(port, host);
  await once(server, 'listening');
  return server;
}
