import { chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sha256Hex } from '../../../gateway/src/keys/api-keys';
import type { PlanName } from '../../../gateway/src/rate-limit/plans';
import { forNamespace, shBlockAfter } from './doc-blocks';
import { bash, figure, kubectl, kubectlJson, serviceUrl, tryKubectl } from './kube';

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
  'exact-across': 'free', // spent before a failover, still spent after it (same minute)
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
}

/** What cannot run here: `mongosh` (no MongoDB image; FerretDB stands in, with no replica set). */
const NO_MONGOSH_SHIM = `kubectl() {
  if [[ " $* " == *" mongosh "* ]]; then
    echo "not run here (FerretDB stands in for MongoDB: no mongosh, no replica set): kubectl $*" >&2
    return 0
  fi
  command kubectl "$@"
}
`;

let deployment: Promise<Record<OverlayName, Deployed>> | undefined;

/**
 * Both overlays deployed once for the whole suite, at the same time, by the steps docs/deploy.md
 * gives (the keys Secret, production's page token Secret, then "Applying"), with only the
 * overlay's path changed to its one-node test overlay; every pod Ready, and the time that took.
 */
export function deployed(): Promise<Record<OverlayName, Deployed>> {
  deployment ??= deployBoth();
  return deployment;
}

async function deployBoth(): Promise<Record<OverlayName, Deployed>> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-e2e-'));
  const keysFile = join(dir, 'keys.yaml');
  writeFileSync(keysFile, stringify({ keys: Object.entries(KEYS).map(([id, plan]) => ({ id, plan, sha256: sha256Hex(secretOf(id)) })) }));
  const volumes = new VolumeOwner();
  try {
    const entries = await Promise.all(
      (Object.keys(OVERLAYS) as OverlayName[]).map(async (name) => [name, await deployOne(name, keysFile)] as const),
    );
    return Object.fromEntries(entries) as Record<OverlayName, Deployed>;
  } finally {
    volumes.stop();
  }
}

async function deployOne(name: OverlayName, keysFile: string): Promise<Deployed> {
  const { namespace, path } = OVERLAYS[name];
  await bash(forNamespace(shBlockAfter('deploy.md', '### The keys Secret'), namespace), { env: { KEYS_FILE: keysFile } });
  // Created once per cluster, as the docs say: a second run of the suite on the same cluster keeps it.
  const tokenExists = (await tryKubectl(['-n', namespace, 'get', 'secret', 'pet-service-page-token'])).code === 0;
  if (name === 'production' && !tokenExists) await bash(shBlockAfter('deploy.md', '### The page token Secret (production)'));
  const started = performance.now();
  const applying = forNamespace(shBlockAfter('deploy.md', '## Applying'), namespace).replaceAll('deploy/overlays/staging', path);
  const ran = await bash(NO_MONGOSH_SHIM + applying);
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
  if (ran.stderr.includes('not run here')) figure(`${name}: not run`, 'rs.initiate (no mongosh, no replica set with FerretDB)');
  const pets = await kubectlJson(['-n', namespace, 'get', 'pods', '-l', 'app.kubernetes.io/name=pet-service']);
  /* eslint-disable-next-line @typescript-eslint/no-explicit-any -- a Pod as the API returns it */
  const restarts = pets.items.flatMap((pod: any) => pod.status.containerStatuses ?? []).reduce((sum: number, c: { restartCount: number }) => sum + c.restartCount, 0);
  figure(`${name}: pet service restarts during the first start`, restarts);
  return { namespace, gatewayUrl: await serviceUrl(namespace, 'gateway'), readySeconds };
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
