/**
 * `npm run bench:tls`: what mutual TLS between the gateway and the pet service costs per read.
 * Two stacks of the production builds side by side, each a gateway and a pet service on the
 * embedded store: one calls over plaintext, the other over mutual TLS with certificates made here
 * (EC P-256, as deploy/scripts/throwaway-ca.sh makes them). autocannon (in this process) reads
 * `GET /v1/pets?limit=20` from each gateway in alternating rounds (A B A B ...), and each process
 * is charged the user plus system CPU that /proc gives for it, per request; the figures are the
 * medians over the rounds, and the cost of TLS the median of the per-round differences.
 * BENCH_ROUNDS (5), BENCH_ROUND_SECONDS (5), BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (16).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createPetServiceClient, PetStatus } from '@petstore/proto';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { startService, type ServiceProcess } from '../system-test/support/service-process';
import { cpuSeconds, median, PET_SERVICE_NODE_FLAGS } from './list-pets-load';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SECRET = 'bench-tls-secret-key-0000';
const SEED_PETS = 1000;
const GATEWAY_RUNTIME = { compiled: true, nodeFlags: ['--max-semi-space-size=4', '--max-old-space-size=64'] };
const PET_SERVICE_RUNTIME = { compiled: true, nodeFlags: [...PET_SERVICE_NODE_FLAGS] };

interface Stack {
  readonly label: string;
  readonly gateway: ServiceProcess;
  readonly petService: ServiceProcess;
  readonly cpu: { gateway: number[]; petService: number[] };
  readonly rps: number[];
}

/** An EC P-256 CA and two leaves, with openssl, as the throwaway-CA script makes them. */
function certificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=bench CA');
  for (const [name, usage] of [
    ['pet-service', 'serverAuth'],
    ['gateway', 'clientAuth'],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), `extendedKeyUsage=${usage}\nsubjectAltName=DNS:localhost,DNS:${name}\n`);
    openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  }
}

async function seed(target: string, tls: object | undefined): Promise<void> {
  const client = createPetServiceClient(target, tls === undefined ? {} : { tls });
  for (let start = 0; start < SEED_PETS; start += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, offset) => client.createPet({ name: `pet-${start + offset}`, categoryId: '1', status: PetStatus.PET_STATUS_UNSPECIFIED })),
    );
  }
  client.close();
}

async function round(stack: Stack, seconds: number, record: boolean): Promise<void> {
  const before = { gateway: cpuSeconds(stack.gateway.child.pid!), petService: cpuSeconds(stack.petService.child.pid!) };
  const result = await autocannon({
    url: `http://127.0.0.1:${stack.gateway.port}/v1/pets?limit=20`,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${SECRET}` },
  });
  const ok = result.statusCodeStats?.['200']?.count ?? 0;
  if (result.errors > 0 || ok !== result.requests.total) throw new Error(`${stack.label}: ${result.errors} errors, ${ok}/${result.requests.total} were 200`);
  if (!record) return;
  stack.cpu.gateway.push(((cpuSeconds(stack.gateway.child.pid!) - before.gateway) * 1e6) / result.requests.total);
  stack.cpu.petService.push(((cpuSeconds(stack.petService.child.pid!) - before.petService) * 1e6) / result.requests.total);
  stack.rps.push(result.requests.total / result.duration);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-tls-'));
  const processes: ServiceProcess[] = [];
  try {
    certificates(dir);
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ id: 'bench', sha256: sha256Hex(SECRET), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } }] }));
    const clientTls = { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'gateway.crt'), keyFile: join(dir, 'gateway.key') };
    const stack = async (label: string, tls: boolean): Promise<Stack> => {
      const petService = await startService(
        'pet-service',
        {
          LOG_LEVEL: 'info',
          MONGODB_URI: '',
          ...(tls ? { GRPC_TLS_CERT_FILE: join(dir, 'pet-service.crt'), GRPC_TLS_KEY_FILE: join(dir, 'pet-service.key'), GRPC_TLS_CLIENT_CA_FILE: join(dir, 'ca.crt') } : {}),
        },
        PET_SERVICE_RUNTIME,
      );
      processes.push(petService);
      await seed(`localhost:${petService.port}`, tls ? clientTls : undefined);
      const gateway = await startService(
        'gateway',
        {
          PET_SERVICE_ADDR: `localhost:${petService.port}`,
          API_KEYS_FILE: keysFile,
          REDIS_URL: '',
          BAN_THRESHOLD: '1000000000',
          LOG_LEVEL: 'info',
          ...(tls ? { PET_SERVICE_TLS_CA_FILE: clientTls.caFile, PET_SERVICE_TLS_CERT_FILE: clientTls.certFile, PET_SERVICE_TLS_KEY_FILE: clientTls.keyFile } : {}),
        },
        GATEWAY_RUNTIME,
      );
      processes.push(gateway);
      return { label, gateway, petService, cpu: { gateway: [], petService: [] }, rps: [] };
    };
    const plaintext = await stack('plaintext', false);
    const mutualTls = await stack('mutual TLS', true);
    for (const side of [plaintext, mutualTls]) await round(side, WARMUP_SECONDS, false);
    for (let index = 0; index < ROUNDS; index += 1) {
      await round(plaintext, ROUND_SECONDS, true);
      await round(mutualTls, ROUND_SECONDS, true);
    }
    console.log(`${ROUNDS} rounds of ${ROUND_SECONDS} s, ${CONNECTIONS} connections, GET /v1/pets?limit=20 (production builds, Node ${process.version})`);
    for (const side of [plaintext, mutualTls]) {
      console.log(
        `${side.label.padEnd(11)} gateway ${median(side.cpu.gateway).toFixed(0)} µs/read, pet service ${median(side.cpu.petService).toFixed(0)} µs/read, ${median(side.rps).toFixed(0)} reads/s`,
      );
    }
    const difference = (process: 'gateway' | 'petService') => median(mutualTls.cpu[process].map((value, index) => value - plaintext.cpu[process][index]!));
    console.log(`TLS costs per read: gateway ${difference('gateway').toFixed(1)} µs, pet service ${difference('petService').toFixed(1)} µs (medians of per-round differences)`);
  } finally {
    for (const service of processes.reverse()) await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
