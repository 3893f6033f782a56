// Where traces go (OpenTelemetry's two endpoint variables), and that with neither set nothing is
// traced: the helpers run what they wrap as it is, and the queues get no telemetry.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/shared/infra/log.ts';
import { queueTelemetry, startTracing, traceCarrier, traced, tracesUrl, tracingOn, withSpan } from '../../../src/shared/infra/tracing.ts';

const unset = { OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined, OTEL_SERVICE_NAME: undefined };

describe('traces', () => {
  it("go to the base endpoint's /v1/traces, or to the traces endpoint as given", () => {
    expect(tracesUrl({ ...unset, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl({ ...unset, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.test/ingest/' })).toBe('https://otel.example.test/ingest/v1/traces');
    expect(
      tracesUrl({ ...unset, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces.example.test/otlp' }),
    ).toBe('http://traces.example.test/otlp');
    expect(tracesUrl({ ...unset, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces.example.test/otlp' })).toBe('http://traces.example.test/otlp');
  });

  it('are off with neither variable set: nothing starts, the wrapped functions run as they are, the queues get no telemetry', async () => {
    expect(tracesUrl(unset)).toBeUndefined();
    expect(await startTracing(unset, 'api', createLogger('test', 'silent'))).toBeUndefined();
    expect(tracingOn()).toBe(false);
    const check = async (value: number) => value + 1;
    expect(withSpan('spam check', check)).toBe(check);
    expect(await traced('smtp send', {}, () => check(1))).toBe(2);
    expect(queueTelemetry()).toEqual({});
    expect(traceCarrier()).toBeUndefined();
  });
});
