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
  /** X-RateLimit-Reset of every response: one value when the burst stayed in one minute. */
  readonly resets: Set<string>;
  /** X-RateLimit-Limit of every admitted response: the limit the gateway that answered enforced. */
  readonly limits: Set<string>;
}

/** `count` concurrent GET /v1/pets with one key, spread round-robin over `urls`, each checked against the OpenAPI document. */
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
  for (const response of responses) {
    statuses.push(response.status);
    const body = (await response.json()) as { code?: string };
    codes.push(response.status === 200 ? 'ok' : (body.code ?? '?'));
    if (response.status === 200 || codes.at(-1) === 'rate_limited') resets.add(response.headers.get('x-ratelimit-reset') ?? '');
    if (response.status === 200) limits.add(response.headers.get('x-ratelimit-limit') ?? '');
  }
  return { statuses, codes, resets, limits };
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
