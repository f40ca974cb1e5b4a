import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

type WorkerMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

const REQUEST = 'petstore:metrics-request';
const REPLY = 'petstore:metrics-reply';

/** In a cluster worker: answers the primary's requests for the metrics in `registry`. */
export function answerMetricsRequests(registry: Registry): void {
  process.on('message', (message: { type?: unknown; id?: unknown } | null) => {
    if (message?.type !== REQUEST) return;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: REPLY, id: message.id, metrics }),
      () => process.send?.({ type: REPLY, id: message.id, metrics: [] }),
    );
  });
}

/**
 * In the cluster primary: the metrics of `workers`, combined by each metric's aggregator (counters
 * and histograms are summed). Only the workers given are asked: one that is still starting cannot
 * answer yet. A worker that does not answer within `timeoutMs`, or exits meanwhile, is left out of
 * this scrape rather than failing it (prom-client's own `clusterMetrics` would fail it after 5 s).
 */
export async function collectWorkerMetrics(workers: readonly Worker[], timeoutMs: number): Promise<string> {
  const replies = await Promise.all(workers.map((worker) => ask(worker, timeoutMs)));
  return AggregatorRegistry.aggregate(replies.filter((reply) => reply !== undefined)).metrics();
}

let nextRequestId = 0;

function ask(worker: Worker, timeoutMs: number): Promise<WorkerMetrics | undefined> {
  const id = nextRequestId++;
  return new Promise((resolve) => {
    const finish = (metrics: WorkerMetrics | undefined): void => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(metrics);
    };
    const onMessage = (message: { type?: unknown; id?: unknown; metrics?: WorkerMetrics } | null): void => {
      if (message?.type === REPLY && message.id === id) finish(message.metrics);
    };
    const onExit = (): void => finish(undefined);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    worker.on('message', onMessage);
    worker.once('exit', onExit);
    worker.send({ type: REQUEST, id }, (error: Error | null) => {
      if (error) finish(undefined);
    });
  });
}
