import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sha256Hex } from '../../gateway/src/keys/api-keys';
import type { Limits, PlanName } from '../../gateway/src/rate-limit/plans';
import { fetchWithinContract } from './openapi-validator';
import { type ServiceProcess, startService } from './service-process';

export interface ReplicaKey {
  readonly id: string;
  readonly plan: PlanName;
  readonly limits?: Limits;
}

/** One pet service process and `count` gateway processes sharing one keys file (secret `secret-<id>`). */
export interface ReplicaSet {
  readonly petService: ServiceProcess;
  readonly gateways: ServiceProcess[];
  readonly urls: string[];
  readonly keysFile: string;
  /** Starts one more gateway on the same settings. */
  addGateway(env?: NodeJS.ProcessEnv): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export const replicaSecret = (keyId: string): string => `secret-${keyId}`;

export async function startReplicaSet(count: number, keys: readonly ReplicaKey[], env: NodeJS.ProcessEnv): Promise<ReplicaSet> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-replicas-'));
  const keysFile = join(dir, 'keys.yaml');
  writeFileSync(keysFile, stringify({ keys: keys.map((key) => ({ ...key, sha256: sha256Hex(replicaSecret(key.id)) })) }));
  const petService = await startService('pet-service');
  const gateways: ServiceProcess[] = [];
  const urls: string[] = [];
  const addGateway = async (extra: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> => {
    const gateway = await startService('gateway', {
      API_KEYS_FILE: keysFile,
      PET_SERVICE_ADDR: `127.0.0.1:${petService.port}`,
      ...env,
      ...extra,
    });
    gateways.push(gateway);
    urls.push(`http://127.0.0.1:${gateway.port}`);
    return gateway;
  };
  try {
    await Promise.all(Array.from({ length: count }, () => addGateway()));
  } catch (error) {
    await Promise.all([...gateways, petService].map((service) => service.stop()));
    throw error;
  }
  return {
    petService,
    gateways,
    urls,
    keysFile,
    addGateway,
    async stop() {
      await Promise.all(gateways.map((gateway) => gateway.stop()));
      await petService.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface BurstResult {
  readonly statuses: number[];
  readonly codes: string[];
  /**
   * Requests the limiter let through, however the pet service then answered them: served (200),
   * or failed behind the limiter (503 shed or unavailable, 504 late), which a busy machine may
   * cause in a burst against one pet service. The limit's exactness is this count, not the 200s.
   */
  readonly admitted: number;
  /** The answers counted by status and code, for an assertion's message. */
  readonly summary: string;
  /** X-RateLimit-Reset of every response: one value when the burst stayed in one minute. */
  readonly resets: Set<string>;
  /** X-RateLimit-Limit of every admitted response: the limit the gateway that answered enforced. */
  readonly limits: Set<string>;
}

/** What the pet service's hop may answer to a request the limiter admitted, other than 200. */
const FAILED_BEHIND_THE_LIMITER = new Set(['503 service_unavailable', '504 gateway_timeout']);

/**
 * `count` concurrent GET /v1/pets with one key, spread round-robin over `urls`, each checked
 * against the OpenAPI document. Fails on any answer other than 200, the limiter's 429s and
 * {@link FAILED_BEHIND_THE_LIMITER}.
 */
export async function burst(urls: readonly string[], keyId: string, count: number): Promise<BurstResult> {
  const responses = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      fetchWithinContract(`${urls[i % urls.length]}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${replicaSecret(keyId)}` } }),
    ),
  );
  const statuses: number[] = [];
  const codes: string[] = [];
  const resets = new Set<string>();
  const limits = new Set<string>();
  const counts = new Map<string, number>();
  let admitted = 0;
  for (const response of responses) {
    statuses.push(response.status);
    const body = (await response.json()) as { code?: string };
    const code = response.status === 200 ? 'ok' : (body.code ?? '?');
    codes.push(code);
    const answer = `${response.status} ${code}`;
    counts.set(answer, (counts.get(answer) ?? 0) + 1);
    if (response.status === 429) {
      if (code === 'rate_limited') resets.add(response.headers.get('x-ratelimit-reset') ?? '');
      continue;
    }
    if (response.status !== 200 && !FAILED_BEHIND_THE_LIMITER.has(answer)) throw new Error(`burst of ${count} on key ${keyId}: answered ${answer}`);
    admitted += 1;
    // A 200 must carry the headers; a failed answer carries them when the limiter set them first.
    if (response.status === 200 || response.headers.has('x-ratelimit-limit')) {
      resets.add(response.headers.get('x-ratelimit-reset') ?? '');
      limits.add(response.headers.get('x-ratelimit-limit') ?? '');
    }
  }
  const summary = JSON.stringify(Object.fromEntries([...counts].sort()));
  return { statuses, codes, admitted, summary, resets, limits };
}

/**
 * A burst that is counted in one UTC minute: the gateways run on the wall clock, which a test in
 * another process cannot hold still, so a burst that straddled a minute is repeated with the next
 * key (bounded by the keys given).
 */
export async function burstWithinOneMinute(urls: readonly string[], keyIds: readonly string[], count: number): Promise<BurstResult> {
  for (const keyId of keyIds) {
    const result = await burst(urls, keyId, count);
    if (result.resets.size === 1) return result;
  }
  throw new Error(`every burst straddled a minute boundary (${keyIds.length} tries)`);
}
