// Ordered shutdown: resources are closed in the reverse order of their registration,
// so a server stops taking requests before the clients it uses are closed.
import type { Logger } from './log.ts';

type Closer = { name: string; close: () => Promise<unknown> | unknown };

export class Shutdown {
  private readonly closers: Closer[] = [];
  private running: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log;
  }

  /** Registers a resource to close at shutdown; returns the resource for chaining at its creation. */
  add<T>(name: string, resource: T, close: (resource: T) => Promise<unknown> | unknown): T {
    this.closers.push({ name, close: () => close(resource) });
    return resource;
  }

  /** Closes everything once, last registered first, each error logged and the rest still closed. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const closer of [...this.closers].reverse()) {
        try {
          await closer.close();
          this.log.debug({ resource: closer.name }, 'closed');
        } catch (error) {
          this.log.error({ err: error, resource: closer.name }, 'close failed');
        }
      }
    })();
    return this.running;
  }

  /** Runs the shutdown on SIGINT/SIGTERM, then exits; a timeout bounds a hung close. */
  onSignals(timeoutMs: number): void {
    const handler = (signal: NodeJS.Signals) => {
      this.log.info({ signal }, 'shutting down');
      const timer = setTimeout(() => {
        this.log.error({ timeoutMs }, 'shutdown timed out');
        process.exit(1);
      }, timeoutMs + 5_000);
      timer.unref();
      void this.run().then(() => process.exit(0));
    };
    process.once('SIGINT', handler);
    process.once('SIGTERM', handler);
    // Started by `npm start`: if that launcher dies without signalling us, shut down too.
    if (process.env.CFS_EXIT_WITH_PARENT === '1') {
      const parent = process.ppid;
      setInterval(() => process.ppid !== parent && handler('SIGTERM'), 1_000).unref();
    }
  }
}
