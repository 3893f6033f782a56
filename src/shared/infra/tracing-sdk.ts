// The OpenTelemetry SDK, loaded by ./tracing.ts only when tracing is configured: spans batched and
// posted as OTLP/HTTP JSON, the W3C trace context as the format BullMQ's jobs carry.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TracerProvider, type Sampler } from '@opentelemetry/sdk-trace';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import type { Logger } from './log.ts';
import { buildInfo } from './version.ts';

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** A span still open, for what is only known at its end. */
export type OpenSpan = { update: (name: string | undefined, attributes: SpanAttributes) => void; fail: (message: string) => void };

/** What ./tracing.ts is given once the SDK has started. */
export type TracingSdk = {
  telemetry: Telemetry;
  span: <T>(name: string, attributes: SpanAttributes, fn: (span: OpenSpan) => Promise<T>, kind: 'server' | 'internal' | 'client') => Promise<T>;
  /** The active trace context, serialized as BullMQ carries it in a job's options. */
  carrier: () => string | undefined;
  within: <T>(carrier: string, fn: () => T) => T;
  stop: () => Promise<void>;
};

/** Spans reach the collector about this long after they end. */
const EXPORT_DELAY_MS = 1_000;
const KINDS = { server: SpanKind.SERVER, internal: SpanKind.INTERNAL, client: SpanKind.CLIENT };

/**
 * A trace starts at a request, at a job added outside one (the reconciler) or at a job that
 * carries no context (added by a release without tracing). BullMQ's own housekeeping spans (a
 * worker's idle polls, its stalled-job checks) would each start a trace every few seconds: dropped.
 */
const rootSampler: Sampler = {
  shouldSample: (_context, _traceId, _name, kind) => ({
    decision: kind === SpanKind.INTERNAL || kind === SpanKind.CLIENT ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED,
  }),
  toString: () => 'requests and jobs',
};

const defined = (attributes: SpanAttributes): Attributes =>
  Object.fromEntries(Object.entries(attributes).filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined));

export function startSdk(options: { url: string; serviceName: string; log: Logger }): TracingSdk {
  const exporter = new OTLPTraceExporter({ url: options.url });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, 'service.version': buildInfo().version }),
    sampler: new ParentBasedSampler({ root: rootSampler }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  // BullMQ's add-on (bullmq-otel) reads the global API: registered here, removed by stop().
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('contact-form-service', buildInfo().version);
  const telemetry = new BullMQOtel({ tracerName: 'bullmq' });

  const open = (span: Span): OpenSpan => ({
    update: (name, attributes) => {
      if (name !== undefined) span.updateName(name);
      span.setAttributes(defined(attributes));
    },
    fail: (message) => span.setStatus({ code: SpanStatusCode.ERROR, message }),
  });

  return {
    telemetry,
    span: (name, attributes, fn, kind) => {
      // A request's span is a root: the public client's traceparent, if any, is not its parent.
      const parent: Context = kind === 'server' ? ROOT_CONTEXT : context.active();
      return tracer.startActiveSpan(name, { kind: KINDS[kind], attributes: defined(attributes) }, parent, async (span) => {
        try {
          return await fn(open(span));
        } catch (error) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
          throw error;
        } finally {
          span.end();
        }
      });
    },
    carrier: () => {
      if (!trace.getSpan(context.active())) return undefined;
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      // The format bullmq-otel writes and reads (its getMetadata and fromMetadata).
      return JSON.stringify(carrier);
    },
    within: (carrier, fn) => context.with(propagation.extract(context.active(), JSON.parse(carrier) as Record<string, string>), fn),
    async stop() {
      await provider.shutdown().catch((error: unknown) => options.log.warn({ err: error }, 'could not send the last spans'));
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
