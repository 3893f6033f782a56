// Traces for operators who run OpenTelemetry, on when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Off, the OpenTelemetry SDK is not loaded
// (./tracing-sdk.ts is imported only when tracing starts) and each helper below is one check of a
// module variable. The trace context crosses the queues in BullMQ's own job options
// (`opts.telemetry`), never in a job's data, which carries ids only.
import type { Telemetry } from 'bullmq';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
// Types only: erased, they load nothing.
import type { OpenSpan, SpanAttributes, TracingSdk } from './tracing-sdk.ts';

type TracingConfig = Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_SERVICE_NAME'>;

let sdk: TracingSdk | undefined;
/** The API and a worker may share a process (the tests, `npm start` does not): one SDK for both. */
let users = 0;

/** Where spans are posted: the traces endpoint as given, or the base endpoint's `/v1/traces`, as OpenTelemetry specifies. */
export function tracesUrl(config: TracingConfig): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT === undefined) return undefined;
  return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
}

/** Starts tracing for this process when configured; `stop` flushes the spans still buffered. */
export async function startTracing(config: TracingConfig, role: 'api' | 'worker', log: Logger): Promise<{ stop: () => Promise<void> } | undefined> {
  const url = tracesUrl(config);
  if (url === undefined) return undefined;
  if (!sdk) {
    const { startSdk } = await import('./tracing-sdk.ts');
    sdk = startSdk({ url, serviceName: config.OTEL_SERVICE_NAME ?? `contact-form-${role}`, log });
    log.info({ url, service: config.OTEL_SERVICE_NAME ?? `contact-form-${role}` }, 'traces exported over OTLP/HTTP');
  }
  users++;
  let stopped = false;
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      if (--users > 0 || !sdk) return;
      const started = sdk;
      sdk = undefined;
      await started.stop();
    },
  };
}

/** BullMQ's `telemetry` option for a queue or a worker: none when tracing is off. */
export const queueTelemetry = (): { telemetry?: Telemetry } => (sdk ? { telemetry: sdk.telemetry } : {});

/** Runs `fn` in a span, a child of the active one. */
export function traced<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T> {
  return sdk ? sdk.span(name, attributes, fn, 'internal') : fn();
}

/** `fn`, each call in a span: `fn` itself when tracing is off at the time it is wrapped. */
export function withSpan<A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  const started = sdk;
  if (!started) return fn;
  return (...args) => started.span(name, {}, () => fn(...args), 'internal');
}

/** A request's span, the root of its trace: an incoming `traceparent` is not followed (public clients set it). */
export function serverSpan<T>(name: string, attributes: SpanAttributes, fn: (span: OpenSpan) => Promise<T>): Promise<T> {
  return sdk ? sdk.span(name, attributes, fn, 'server') : fn(NO_SPAN);
}

const NO_SPAN: OpenSpan = { update: () => undefined, fail: () => undefined };

export const tracingOn = (): boolean => sdk !== undefined;

/** The active trace context for a job added later, from another context (a batch of requests' jobs). */
export const traceCarrier = (): string | undefined => sdk?.carrier();

/** Runs `fn` in the trace context `carrier` names (from traceCarrier). */
export function inTrace<T>(carrier: string | undefined, fn: () => T): T {
  return sdk && carrier !== undefined ? sdk.within(carrier, fn) : fn();
}
