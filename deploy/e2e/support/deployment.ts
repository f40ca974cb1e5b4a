import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sha256Hex } from '../../../gateway/src/keys/api-keys';
import type { PlanName } from '../../../gateway/src/rate-limit/plans';
import { oneMemberUri } from '../../test/support/mongodb-stand-in';
import { forNamespace, shBlockAfter } from './doc-blocks';
import { bash, figure, kubectl, kubectlJson, ROOT, serviceUrl, tryKubectl } from './kube';

export const OVERLAYS = {
  staging: { namespace: 'petstore-staging', path: 'deploy/e2e/overlays/staging', gateways: 1 },
  production: { namespace: 'petstore', path: 'deploy/e2e/overlays/production', gateways: 3 },
} as const;
export type OverlayName = keyof typeof OVERLAYS;

/** The suite's keys: legacy secrets (`e2e-secret-<id>`), so a test can compute each one. */
export const KEYS: Readonly<Record<string, PlanName>> = {
  load: 'business', // steady traffic: 1000 a minute, above the 10 requests a second the tests send
  contract: 'pro',
  'exact-before': 'free', // 60 a minute: counted exactly before a failover
  'exact-after': 'free', // ... and after it
  'exact-across': 'free', // spent before a failover, still spent after it (its minute and day counters)
  revoked: 'free', // revoked by the documented steps
};
export const secretOf = (keyId: string): string => `e2e-secret-${keyId}`;
export const bearer = (keyId: string): Record<string, string> => ({ Authorization: `Bearer ${secretOf(keyId)}` });

export interface Deployed {
  readonly namespace: string;
  /** The gateway Service, reached from the node through its ClusterIP (kube-proxy's rules). */
  readonly gatewayUrl: string;
  /** From `kubectl apply -k` to every pod of the namespace Ready. */
  readonly readySeconds: number;
  /**
   * Where make-secrets.sh wrote the overlay's Secrets: the manifests, and in `tls/` the throwaway
   * CA with its key, from which more certificates can be issued (throwaway-ca.sh).
   */
  readonly secretsDir: string;
}

/**
 * What cannot run here: `mongosh` with mongodb-init.js (no MongoDB image: FerretDB stands in, with
 * no mongosh, no replica set and no roles). Its stand-in does what FerretDB can of it, and says so.
 */
const MONGOSH_STAND_IN = `kubectl() {
  if [[ " $* " == *" mongosh "* ]]; then
    echo "not run here (FerretDB stands in for MongoDB: no mongosh, no replica set): kubectl $*" >&2
    "${join(ROOT, 'node_modules', '.bin', 'tsx')}" "${join(ROOT, 'deploy', 'e2e', 'stand-ins', 'mongodb-init.ts')}" "$@"
    return
  fi
  command kubectl "$@"
}
`;

let deployment: Promise<Record<OverlayName, Deployed>> | undefined;
/** The suite's files: the keys file, and each overlay's Secrets with the throwaway CA's key. */
let filesDir: string | undefined;

/**
 * Both overlays deployed once for the whole suite, at the same time, by the steps docs/deploy.md
 * gives (the keys Secret, the Secrets make-secrets.sh makes, then "Applying"), with only the
 * overlay's name, path and namespace changed, and the one-member MongoDB URI (FerretDB has no
 * replica set); every pod Ready, and the time that took.
 */
export function deployed(): Promise<Record<OverlayName, Deployed>> {
  deployment ??= deployBoth();
  return deployment;
}

async function deployBoth(): Promise<Record<OverlayName, Deployed>> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-e2e-'));
  filesDir = dir;
  const keysFile = join(dir, 'keys.yaml');
  writeFileSync(keysFile, stringify({ keys: Object.entries(KEYS).map(([id, plan]) => ({ id, plan, sha256: sha256Hex(secretOf(id)) })) }));
  const volumes = new VolumeOwner();
  try {
    const entries = await Promise.all(
      (Object.keys(OVERLAYS) as OverlayName[]).map(async (name) => [name, await deployOne(name, keysFile, join(dir, `${name}-secrets`))] as const),
    );
    return Object.fromEntries(entries) as Record<OverlayName, Deployed>;
  } finally {
    volumes.stop();
  }
}

async function deployOne(name: OverlayName, keysFile: string, secretsDir: string): Promise<Deployed> {
  const { namespace, path } = OVERLAYS[name];
  await bash(forNamespace(shBlockAfter('deploy.md', '### The keys Secret'), namespace), { env: { KEYS_FILE: keysFile } });
  // Staging's block, for either overlay. Production's certificates come from the throwaway CA as
  // staging's do: no cert-manager here (docs/security.md gives its Certificates).
  const secrets = forNamespace(shBlockAfter('deploy.md', '### The Secrets: certificates, passwords, the MongoDB URI'), namespace)
    .replace('make-secrets.sh staging', `make-secrets.sh ${name}`)
    .replaceAll('/secure/place/staging-secrets', secretsDir);
  await bash(secrets);
  await useOneMember(namespace);
  // make-secrets.sh made production's page token Secret: the docs' by-hand block is its alternative.
  const tokenExists = (await tryKubectl(['-n', namespace, 'get', 'secret', 'pet-service-page-token'])).code === 0;
  if (name === 'production' && !tokenExists) await bash(shBlockAfter('deploy.md', '### The page token Secret (production)'));
  const started = performance.now();
  const applying = forNamespace(shBlockAfter('deploy.md', '## Applying'), namespace).replaceAll('deploy/overlays/staging', path);
  const ran = await bash(MONGOSH_STAND_IN + applying);
  const stepsSeconds = (performance.now() - started) / 1000;
  // The autoscalers raise each Deployment to their minimum after the steps: wait for those pods too.
  const autoscalers = await kubectlJson(['-n', namespace, 'get', 'hpa']);
  for (const hpa of autoscalers.items) {
    const target = `deployment/${hpa.spec.scaleTargetRef.name}`;
    await kubectl(['-n', namespace, 'wait', `--for=jsonpath={.status.readyReplicas}=${hpa.spec.minReplicas}`, target, '--timeout=300s']);
  }
  await kubectl(['-n', namespace, 'wait', '--for=condition=Ready', 'pod', '--all', '--timeout=300s']);
  const readySeconds = (performance.now() - started) / 1000;
  figure(`${name}: the documented steps ("Applying") took`, `${stepsSeconds.toFixed(1)} s`);
  figure(`${name}: from kubectl apply to every pod Ready`, `${readySeconds.toFixed(1)} s`);
  if (ran.stderr.includes('not run here')) figure(`${name}: not run`, 'mongodb-init.js (no mongosh, no replica set with FerretDB); its stand-in made the user petstore, without roles');
  const pets = await kubectlJson(['-n', namespace, 'get', 'pods', '-l', 'app.kubernetes.io/name=pet-service']);
  /* eslint-disable-next-line @typescript-eslint/no-explicit-any -- a Pod as the API returns it */
  const restarts = pets.items.flatMap((pod: any) => pod.status.containerStatuses ?? []).reduce((sum: number, c: { restartCount: number }) => sum + c.restartCount, 0);
  figure(`${name}: pet service restarts during the first start`, restarts);
  return { namespace, gatewayUrl: await serviceUrl(namespace, 'gateway'), readySeconds, secretsDir };
}

/** Removes the suite's files (the Secrets' values, the CA's key): the cluster they were for is gone after the suite. */
export function removeDeploymentFiles(): void {
  if (filesDir !== undefined) rmSync(filesDir, { recursive: true, force: true });
}

/**
 * The one step the suite adds to the documented ones, because FerretDB has no replica set: the
 * URI in Secret pet-service-mongodb (every member, `replicaSet=rs0`) replaced by the first
 * member's alone, with the same user and password, before the pet service starts.
 */
async function useOneMember(namespace: string): Promise<void> {
  const secret = await kubectlJson(['-n', namespace, 'get', 'secret', 'pet-service-mongodb']);
  const uri = oneMemberUri(Buffer.from(secret.data.uri, 'base64').toString('utf8'));
  const replaced = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pet-service-mongodb', namespace }, type: secret.type, data: { uri: Buffer.from(uri).toString('base64') } };
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(replaced) });
}

/**
 * The hostPath provisioner makes each volume's directory root:root 0750, and fsGroup does not
 * apply to hostPath volumes, so a database that runs as uid 999 (as the manifests run MongoDB)
 * could not write it. While the overlays come up, each new volume's directory is given to 999, as
 * a real provisioner's volume would be writable through fsGroup.
 */
class VolumeOwner {
  private readonly done = new Set<string>();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => void this.sweep(), 500);
  }

  private async sweep(): Promise<void> {
    const list = await kubectlJson(['get', 'pv']).catch(() => ({ items: [] }));
    for (const pv of list.items) {
      const path: string | undefined = pv.spec.hostPath?.path;
      if (path === undefined || this.done.has(path)) continue;
      try {
        chownSync(path, 999, 999);
        this.done.add(path);
      } catch {
        // Not created yet: the next sweep.
      }
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
