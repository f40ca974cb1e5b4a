import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pods, tryKubectl } from './kube';

const NAMESPACES = ['petstore', 'petstore-staging'];
/** How far back a failed test's logs are read: longer than any one test of the suite. */
const SINCE = '15m';
/** The failure lines printed per pod; the whole logs are in the directory. */
const LINES_PER_POD = 25;
/** The pet service's figures that tell a slow store from a full bound or an unreachable one. */
const PET_SERVICE_METRICS = /^(pet_store_reads_(limit|running|queued)|pet_store_operation_seconds_(sum|count)|grpc_server_handled_total)\b/;

/** A JSON log line that says something failed: a warning or worse, a failed gRPC call, a 5xx. */
function failed(line: string): boolean {
  if (!line.startsWith('{')) return false;
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; code?: string };
    return (entry.level ?? 0) >= 40 || (entry.msg === 'grpc call' && entry.code !== 'OK');
  } catch {
    return false;
  }
}

/**
 * What the pods of both overlays said and counted around a failed test: every pod's log of the last
 * minutes written to a directory, and printed, per pod, its last lines that say something failed
 * (warnings and errors, the pet services' failed calls with their reason, the gateways' 5xx), with
 * each pet service's store and call figures from its /metrics. A failure on a machine nobody can
 * log into is diagnosed from this, not guessed at (docs/testing.md).
 */
export async function printDiagnostics(title: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-e2e-diagnostics-'));
  console.log(`      diagnostics of "${title}" (every pod's log of the last ${SINCE}: ${dir})`);
  for (const namespace of NAMESPACES) {
    for (const pod of await pods(namespace).catch(() => [])) {
      const logs = (await tryKubectl(['-n', namespace, 'logs', pod.name, '--all-containers', `--since=${SINCE}`])).stdout;
      writeFileSync(join(dir, `${namespace}.${pod.name}.log`), logs);
      const failures = logs.split('\n').filter(failed);
      console.log(`      ${namespace}/${pod.name} (${pod.ready ? 'ready' : 'not ready'}, ${pod.restarts} restarts): ${failures.length} failure line(s)`);
      for (const line of failures.slice(-LINES_PER_POD)) console.log(`        ${line}`);
      if (pod.labels['app.kubernetes.io/name'] !== 'pet-service' || pod.ip === '') continue;
      const metrics = await fetch(`http://${pod.ip}:9091/metrics`, { signal: AbortSignal.timeout(5000) })
        .then((response) => response.text())
        .catch((error: unknown) => `# /metrics unreachable: ${String(error)}`);
      writeFileSync(join(dir, `${namespace}.${pod.name}.metrics`), metrics);
      for (const line of metrics.split('\n').filter((line) => PET_SERVICE_METRICS.test(line) && !line.includes('code="OK"'))) console.log(`        ${line}`);
    }
  }
}
