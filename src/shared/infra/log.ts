// One structured JSON logger per process; the level comes from LOG_LEVEL.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
  const options = { level, base: { service } };
  return destination ? pino(options, destination) : pino(options);
}
