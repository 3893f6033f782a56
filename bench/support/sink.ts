// The parent's side of the SMTP sink process (sink-process.ts): arrivals by Message-ID.
import { spawnNode, waitForMessage, type Child } from './proc.ts';

/** `at`: epoch ms with a fraction (performance.timeOrigin + performance.now()), comparable across processes. */
export type Arrival = { id: string; at: number; bytes: number };

export type Sink = {
  url: string;
  child: Child;
  /** Every message received since the last reset, in arrival order. */
  arrivals: Arrival[];
  /** Every message answered 250 since the last reset, in that order (a resent message appears twice). */
  accepted: Arrival[];
  count: () => number;
  reset: () => void;
  setDelay: (ms: number) => void;
  /** Refuses every message (451) from now until told otherwise: the relay down for everyone. */
  setRefusing: (on: boolean) => void;
  /** Resolves when `count` messages have arrived, or at the deadline (epoch ms) with what there is. */
  waitFor: (count: number, deadline: number) => Promise<boolean>;
  stop: () => Promise<void>;
};

export async function startSink(delayMs: number): Promise<Sink> {
  const child = await spawnNode({ name: 'smtp-sink', script: 'bench/support/sink-process.ts', env: { SINK_DELAY_MS: String(delayMs) }, ipc: true });
  const { port } = await waitForMessage<{ type: 'ready'; port: number }>(child, 'ready');
  const sink: Sink = {
    url: `smtp://127.0.0.1:${port}`,
    child,
    arrivals: [],
    accepted: [],
    count: () => sink.arrivals.length,
    reset: () => {
      sink.arrivals = [];
      sink.accepted = [];
    },
    setDelay: (ms) => child.child.send({ type: 'delay', ms }),
    setRefusing: (on) => child.child.send({ type: 'refuse', on }),
    async waitFor(count, deadline) {
      while (sink.arrivals.length < count) {
        if (Date.now() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return true;
    },
    stop: child.stop,
  };
  child.child.on('message', (message: { type: string; items?: Array<[string, number, number]> }) => {
    if (!message.items) return;
    const list = message.type === 'mail' ? sink.arrivals : message.type === 'accepted' ? sink.accepted : undefined;
    for (const [id, at, bytes] of message.items) list?.push({ id, at, bytes });
  });
  return sink;
}
