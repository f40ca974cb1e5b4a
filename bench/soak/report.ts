/** The soak's printed report, and its verdict. */
import type { Monitored, Topology } from './stack';
import type { Sample, SoakTraffic } from './traffic';

/** A fault and when it happened, ms since the traffic began. */
export interface FaultEvent {
  readonly at: number;
  what: string;
  /** When it was over (the process back, the Redis serving), if it had an end. */
  end?: number;
}

export interface RssSample {
  readonly name: string;
  readonly at: number;
  readonly kb: number;
}

export interface SoakResult {
  readonly seconds: number;
  readonly topology: Topology;
  readonly rate: number;
  readonly traffic: SoakTraffic;
  readonly events: readonly FaultEvent[];
  readonly rss: readonly RssSample[];
  readonly monitored: readonly Monitored[];
  readonly rssGrowthLimit: number;
  /** Acknowledged creates not listed at the end as they were created. */
  readonly lost: readonly string[];
  readonly gatewayLogs: ReadonlyArray<Record<string, unknown>>;
  readonly petServiceLogs: ReadonlyArray<Record<string, unknown>>;
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Prints the report; resolves whether every promise held. */
export function summarize(result: SoakResult): boolean {
  const { traffic, events } = result;
  const verdicts: Array<[string, boolean]> = [];
  console.log(`\n== soak: ${result.topology}, ${result.seconds} s, ${result.rate}/s of the mix ==`);

  console.log('\nfaults (s since the traffic began):');
  for (const event of events) console.log(`  ${seconds(event.at).padStart(8)}${event.end === undefined ? '' : ` to ${seconds(event.end)}`}  ${event.what}`);

  const byKind = new Map<string, Sample[]>();
  for (const sample of traffic.samples) byKind.set(sample.kind, [...(byKind.get(sample.kind) ?? []), sample]);
  console.log(`\nrequests: ${traffic.samples.length} (${(traffic.samples.length / result.seconds).toFixed(1)}/s), not started for lack of room in flight: ${traffic.behind}`);
  for (const [kind, samples] of [...byKind].sort()) {
    const statuses = new Map<string, number>();
    for (const sample of samples) {
      const label = sample.status === 0 ? 'no answer' : `${sample.status}${sample.code === undefined ? '' : ` ${sample.code}`}`;
      statuses.set(label, (statuses.get(label) ?? 0) + 1);
    }
    const ms = samples.map((sample) => sample.ms).sort((a, b) => a - b);
    const figures = [...statuses].sort().map(([label, count]) => `${label}: ${count}`).join(', ');
    console.log(`  ${kind.padEnd(12)} ${String(samples.length).padStart(7)}  p50 ${percentile(ms, 0.5).toFixed(1)} ms, p99 ${percentile(ms, 0.99).toFixed(1)} ms  [${figures}]`);
  }

  const failures = traffic.samples.filter((sample) => sample.problem !== undefined);
  const groups = new Map<string, Sample[]>();
  for (const sample of failures) {
    const key = `${sample.kind} via gateway ${sample.gateway}: ${sample.problem}`;
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  console.log(`\nanswers a request of its kind may not get: ${failures.length}`);
  for (const [key, samples] of groups) {
    const first = samples[0]!.at;
    const near = events.filter((event) => event.at <= first + 1000).at(-1);
    console.log(`  ${samples.length} × ${key}; from ${seconds(first)} to ${seconds(samples.at(-1)!.at)}${near === undefined ? '' : `, after "${near.what}" at ${seconds(near.at)}`}`);
  }
  verdicts.push(['no 5xx, no connection error, no unexpected answer on a gateway in rotation', failures.length === 0]);

  const replays = traffic.samples.filter((sample) => sample.kind === 'replay');
  console.log(`\ncreates acknowledged: ${traffic.created.size}; missing or changed at the end: ${result.lost.length}; replays: ${replays.length}`);
  for (const line of result.lost.slice(0, 20)) console.log(`  ${line}`);
  verdicts.push(['every acknowledged create readable at the end with its body', result.lost.length === 0 && traffic.created.size > 0]);
  verdicts.push(['replays made, each with its original id (checked above)', replays.length > 0]);

  const banned = traffic.samples.filter((sample) => sample.code === 'api_key_banned');
  console.log(`hammering key: banned answers ${banned.length}, first at ${banned.length === 0 ? '-' : seconds(banned[0]!.at)}`);
  verdicts.push(['the hammering key was banned', banned.length > 0]);

  verdicts.push(...rssReport(result));

  const levels = new Map<string, { count: number; example: Record<string, unknown> }>();
  for (const line of result.gatewayLogs) {
    if (typeof line.level !== 'number' || line.level < 50) continue;
    const key = `${String(line.msg)} (${String(line.status ?? line.level)})`;
    const entry = levels.get(key) ?? { count: 0, example: line };
    entry.count += 1;
    levels.set(key, entry);
  }
  console.log(`\ngateway log lines at error or fatal: ${levels.size === 0 ? 'none' : ''}`);
  for (const [key, { count, example }] of levels) console.log(`  ${count} × ${key}, e.g. ${JSON.stringify(example)}`);
  // What the pet services said of the calls they failed: a store timeout, a shed call, a cancel.
  const failedCalls = new Map<string, number>();
  for (const line of result.petServiceLogs) {
    if (line.msg !== 'grpc call' || line.code === 'OK' || line.code === undefined) continue;
    // Numbers (pet ids) out of the reason, so that a kind of failure is one line, not one per pet.
    const key = `${String(line.method)} ${String(line.code)}${line.reason === undefined ? '' : `: ${String(line.reason).replace(/\d+/g, 'N')}`}`;
    failedCalls.set(key, (failedCalls.get(key) ?? 0) + 1);
  }
  console.log(`pet service calls that failed: ${failedCalls.size === 0 ? 'none' : ''}`);
  for (const [key, count] of [...failedCalls].sort((a, b) => b[1] - a[1])) console.log(`  ${count} × ${key}`);
  const crashes = result.gatewayLogs.filter((line) => line.level === 60 || /uncaught/i.test(String(line.msg)));
  verdicts.push(['no gateway crashed (no fatal or uncaught line)', crashes.length === 0]);

  console.log('\nverdict:');
  for (const [what, held] of verdicts) console.log(`  ${held ? 'ok  ' : 'FAIL'} ${what}`);
  return verdicts.every(([, held]) => held);
}

/** Mean RSS of each process in each quarter of the run; our services never restarted may not grow past the limit. */
function rssReport(result: SoakResult): Array<[string, boolean]> {
  const quarterMs = (result.seconds * 1000) / 4;
  console.log('\nRSS, mean MB by quarter of the run:');
  const verdicts: Array<[string, boolean]> = [];
  for (const process of result.monitored) {
    const quarters = [0, 1, 2, 3].map((quarter) => {
      const samples = result.rss.filter((sample) => sample.name === process.name && Math.min(3, Math.floor(sample.at / quarterMs)) === quarter);
      return samples.length === 0 ? undefined : samples.reduce((sum, sample) => sum + sample.kb, 0) / samples.length / 1024;
    });
    const text = quarters.map((mb) => (mb === undefined ? '   -  ' : mb.toFixed(1).padStart(6))).join(' ');
    const growth = quarters[3] !== undefined && quarters[1] !== undefined ? quarters[3] / quarters[1] : undefined;
    const note = process.restarted ? '  (restarted during the run)' : `  last/second ${growth?.toFixed(3) ?? '-'}${process.kind === 'store' ? ' (a store: grows with its data)' : ''}`;
    console.log(`  ${process.name.padEnd(20)} ${text}${note}`);
    if (!process.restarted && process.kind === 'service') {
      verdicts.push([`${process.name}: RSS grew at most ${Math.round((result.rssGrowthLimit - 1) * 100)}% from the second quarter to the last`, growth !== undefined && growth <= result.rssGrowthLimit]);
    }
  }
  return verdicts;
}
