// One structured JSON logger per process; the level comes from LOG_LEVEL.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { service } });
}
