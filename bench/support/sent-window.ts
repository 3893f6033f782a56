// The workers' histograms (their METRICS_PORT), scraped around a drain: above all the duplicate
// window, from the SMTP server's 250 to `sent` committed (`cfs_delivery_sent_record_seconds`).
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export type Histogram = { buckets: Array<[le: number, count: number]>; sum: number; count: number };

export const SENT_WINDOW_METRIC = 'cfs_delivery_sent_record_seconds';

/** Scrapes and adds up one histogram of every worker (their metrics need the operator token). */
export async function scrapeHistogram(urls: string[], adminToken: string, metric: string): Promise<Histogram> {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  for (const url of urls) {
    const text = await (await fetch(url, { headers: { authorization: `Bearer ${adminToken}` } })).text();
    for (const match of text.matchAll(new RegExp(`^${metric}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))) {
      const le = match[1] === '+Inf' ? Infinity : Number(match[1]);
      byLe.set(le, (byLe.get(le) ?? 0) + Number(match[2]));
    }
    sum += Number(new RegExp(`^${metric}_sum (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    count += Number(new RegExp(`^${metric}_count (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  }
  return { buckets: [...byLe.entries()].sort((a, b) => a[0] - b[0]), sum, count };
}

/** What `after` counted since `before` (two scrapes of the same workers). */
export function histogramSince(after: Histogram, before: Histogram): Histogram {
  const earlier = new Map(before.buckets);
  return {
    buckets: after.buckets.map(([le, count]) => [le, count - (earlier.get(le) ?? 0)]),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** Two scrapes' counts added up (histograms of the same buckets, from different drains). */
export function addHistograms(first: Histogram, second: Histogram): Histogram {
  const counts = new Map(second.buckets);
  return {
    buckets: first.buckets.map(([le, count]) => [le, count + (counts.get(le) ?? 0)]),
    sum: first.sum + second.sum,
    count: first.count + second.count,
  };
}

/** Prometheus' histogram_quantile: linear within the bucket that holds the quantile; in ms. */
export function quantileMs(histogram: Histogram, q: number): number {
  const rank = q * histogram.count;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of histogram.buckets) {
    if (cumulative >= rank) {
      if (le === Infinity) return lower * 1000;
      const inBucket = cumulative - below;
      return (lower + (le - lower) * (inBucket ? (rank - below) / inBucket : 0)) * 1000;
    }
    lower = le;
    below = cumulative;
  }
  return Number.NaN;
}
