/**
 * `npm run soak`: the stack as users run it, under mixed traffic and the faults production has,
 * for SOAK_SECONDS (default 90); see docs/testing.md#the-soak. Prints what it sent, what came back,
 * each process's RSS by quarter and every fault's time, and exits 1 when any promise broke:
 * a 5xx or a connection error on a gateway in rotation, an answer the request's kind may not
 * get, an acknowledged create missing or changed at the end, a replay with another id, no ban
 * of the hammering key, or a gateway or pet service that was never restarted growing its RSS by
 * more than 10% from the second quarter to the last (the stores' RSS is reported: it grows with
 * the data the run writes).
 *
 * Settings: SOAK_SECONDS (30 or more), SOAK_TOPOLOGY (`standalone`, `cluster`: three masters,
 * `sentinel`: a master, a replica and three Sentinels, with a failover), SOAK_RATE (requests per
 * second of the mix, default below what the stack sustains on 2 cores: docs/testing.md), and
 * SOAK_MAX_PETS (the most pets the run creates, at one a second or fewer; default 300).
 */
import { memoryMb } from './list-pets-load';
import { secretOf, type SoakKey, type SoakStack, startSoakStack, type Topology } from './soak/stack';
import { type CreatedPet, samePet, SoakTraffic } from './soak/traffic';
import { type FaultEvent, type RssSample, summarize } from './soak/report';

const TOPOLOGIES: readonly Topology[] = ['standalone', 'cluster', 'sentinel'];
const LOAD_KEYS = ['soak-load-0', 'soak-load-1', 'soak-load-2'];
const HAMMER_KEY = 'soak-hammer';
const VERIFY_KEY = 'soak-verify';
const HAMMER_RATE = 3;
const KEYS_REWRITE_MS = 20_000;
/** Faults repeat once per cycle of at most this long, so a long run meets each several times. */
const MAX_CYCLE_MS = 600_000;
const RSS_SAMPLE_MS = 1000;
const RSS_GROWTH_LIMIT = 1.1;
const VERIFY_RETRIES = 30;

function setting(name: string, fallback: string, valid: (value: string) => boolean, expected: string): string {
  const value = process.env[name] ?? fallback;
  if (!valid(value)) {
    console.error(`${name}=${value}: must be ${expected}`);
    process.exit(1);
  }
  return value;
}

const seconds = Number(setting('SOAK_SECONDS', '90', (v) => /^\d+$/.test(v) && Number(v) >= 30, 'a whole number of seconds, 30 or more'));
const topology = setting('SOAK_TOPOLOGY', 'standalone', (v) => TOPOLOGIES.includes(v as Topology), TOPOLOGIES.join(', ')) as Topology;
const rate = Number(setting('SOAK_RATE', '40', (v) => /^\d+$/.test(v) && Number(v) >= 1, 'a whole number of requests per second'));
const maxPets = Number(setting('SOAK_MAX_PETS', '300', (v) => /^\d+$/.test(v) && Number(v) >= 10, 'a whole number of pets, 10 or more'));
/** A create a second, or fewer, so that the run creates at most SOAK_MAX_PETS pets. */
const createRate = Math.min(1, maxPets / seconds);

const baseKeys: SoakKey[] = [
  ...LOAD_KEYS.map((id) => ({ id, plan: 'enterprise' as const, limits: { perMinute: 1_000_000, perDay: 1_000_000_000 } })),
  { id: VERIFY_KEY, plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 1_000_000_000 } },
  { id: HAMMER_KEY, plan: 'free' },
];

function rssKb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  // A process gone or exiting (a restart under way) has no VmRSS: no sample.
  const { rss } = memoryMb(pid);
  return Number.isNaN(rss) ? undefined : rss * 1024;
}

/** Plays the faults of each cycle: Redis killed and restored, then a pet service, then a gateway restarted. */
async function injectFaults(stack: SoakStack, traffic: SoakTraffic, events: FaultEvent[], running: () => boolean): Promise<void> {
  const totalMs = seconds * 1000;
  const cycles = Math.max(1, Math.round(totalMs / MAX_CYCLE_MS));
  const cycleMs = totalMs / cycles;
  const until = async (at: number): Promise<boolean> => {
    while (running() && traffic.elapsed() < at) await new Promise((resolve) => setTimeout(resolve, 50));
    return running();
  };
  const play = async (what: string, action: () => Promise<unknown>): Promise<void> => {
    const event: FaultEvent = { at: traffic.elapsed(), what };
    events.push(event);
    await action();
    event.end = traffic.elapsed();
  };
  for (let cycle = 0; cycle < cycles; cycle += 1) {
    const start = cycle * cycleMs;
    if (!(await until(start + 0.2 * cycleMs))) return;
    await play(stack.redisFault.describe, async () => {
      const killed = await stack.redisFault.kill();
      events.at(-1)!.what += ` (${killed})`;
      await new Promise((resolve) => setTimeout(resolve, 5000));
      await stack.redisFault.restore();
    });
    if (!(await until(start + 0.45 * cycleMs))) return;
    await play('pet-service-1 restarted (SIGTERM, exit 0, started again)', () => stack.restartPetService(1));
    if (!(await until(start + 0.7 * cycleMs))) return;
    await play('gateway-1 restarted (SIGTERM: out of rotation when /readyz failed; exit 0; back once ready)', () => stack.restartGateway(1));
  }
}

/** Every pet the API lists, walked through `Link` with the verify key, by id. */
async function listEverything(stack: SoakStack): Promise<Map<string, { name: string; categoryId: number; status: string }>> {
  const found = new Map<string, { name: string; categoryId: number; status: string }>();
  let path: string | undefined = '/v1/pets?limit=100';
  let retries = 0;
  while (path !== undefined) {
    const response: Response = await fetch(`${stack.gatewayUrls[0]}${path}`, { headers: { Authorization: `Bearer ${secretOf(VERIFY_KEY)}` } });
    // The traffic has stopped; a page refused as the stack catches up is asked for again.
    if ((response.status === 503 || response.status === 504) && retries < VERIFY_RETRIES) {
      retries += 1;
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      continue;
    }
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    for (const pet of (await response.json()) as Array<{ id: number; name: string; categoryId: number; status: string }>) found.set(String(pet.id), pet);
    const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    path = next === undefined ? undefined : new URL(next, 'http://gateway').pathname + new URL(next, 'http://gateway').search;
  }
  return found;
}

async function main(): Promise<void> {
  console.log(
    `soak: ${seconds} s on ${topology} Redis, ${rate} requests/s of the mix, ${createRate.toFixed(2)} creates/s (and 0.4 replays each), ${HAMMER_RATE}/s from one hammering key`,
  );
  const stack = await startSoakStack(topology, baseKeys);
  const events: FaultEvent[] = [];
  const rss: RssSample[] = [];
  let running = true;
  let traffic: SoakTraffic | undefined;
  try {
    traffic = new SoakTraffic({ gatewayUrls: stack.gatewayUrls, endpoints: stack.endpoints, rate, hammerRate: HAMMER_RATE, createRate, loadKeys: LOAD_KEYS, hammerKey: HAMMER_KEY });
    const clock = traffic;
    const sampler = setInterval(() => {
      for (const process of stack.monitored) {
        const kb = rssKb(process.pid());
        if (kb !== undefined) rss.push({ name: process.name, at: clock.elapsed(), kb });
      }
    }, RSS_SAMPLE_MS);
    let rewrites = 0;
    const rewriter = setInterval(() => {
      rewrites += 1;
      // Each version differs: a key comes and goes, as the CLI's edits make it.
      stack.writeKeys([...baseKeys, { id: `soak-rotating-${rewrites}`, plan: 'pro' }]);
      events.push({ at: clock.elapsed(), what: `keys file rewritten (${rewrites})` });
    }, KEYS_REWRITE_MS);
    const faults = injectFaults(stack, clock, events, () => running);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    running = false;
    clearInterval(rewriter);
    await faults;
    await traffic.stop();
    clearInterval(sampler);

    const lost: string[] = [];
    const listed = await listEverything(stack).catch((error: unknown) => {
      lost.push(`every pet could not be listed: ${(error as Error).message}`);
      return new Map<string, { name: string; categoryId: number; status: string }>();
    });
    for (const [id, created] of traffic.created) {
      const pet = listed.get(id);
      if (pet === undefined || !samePet(created as CreatedPet, pet)) lost.push(`${id}: created ${JSON.stringify(created)}, listed ${JSON.stringify(pet)}`);
    }
    const ok = summarize({
      seconds,
      topology,
      rate,
      traffic,
      events,
      rss,
      monitored: stack.monitored,
      rssGrowthLimit: RSS_GROWTH_LIMIT,
      lost,
      gatewayLogs: stack.gatewayLogs(),
      petServiceLogs: stack.petServiceLogs(),
    });
    process.exitCode = ok ? 0 : 1;
  } finally {
    running = false;
    await traffic?.stop();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
