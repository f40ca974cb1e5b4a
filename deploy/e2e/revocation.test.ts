import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bash, clusterOrPending, figure, kubectl, kubectlJson, pods, ROOT } from './support/kube';
import { bearer, deployed, OVERLAYS, type OverlayName } from './support/deployment';
import { forNamespace, shBlockAfter } from './support/doc-blocks';

/** docs/keys.md: the kubelet rewrites the volume at its next pod sync (every 60 to 90 s), the gateway reads it within 2 s. */
const REFUSED_WITHIN_SECONDS = 95;

/** One gateway pod's answer to the revoked key, asked on its pod IP (not through the Service). */
async function answer(ip: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://${ip}:8080/v1/pets?limit=1`, { headers: bearer('revoked'), signal: AbortSignal.timeout(5000) });
  return { status: response.status, body: await response.text() };
}

describe('deploy/e2e: revoking a key by the steps of docs/keys.md', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    it(`${name}: every replica refuses it within ${REFUSED_WITHIN_SECONDS} s, with no restart, and the next apply -k keeps it revoked`, async () => {
      const { namespace } = (await deployed())[name];
      const gateways = await pods(namespace, 'app.kubernetes.io/name=gateway');
      expect(gateways).to.have.length(OVERLAYS[name].gateways);
      for (const pod of gateways) expect((await answer(pod.ip)).status, pod.name).to.equal(200);

      // As an operator runs them, in a directory of their own, with the project's CLI.
      const steps = forNamespace(shBlockAfter('keys.md', '## Kubernetes: revoking a key in every replica'), namespace).replace('--id acme', '--id revoked');
      const dir = mkdtempSync(join(tmpdir(), 'petstore-e2e-revoke-'));
      try {
        await bash(`npm() { command npm --prefix "${ROOT}" "$@"; }\n${steps}`, { cwd: dir });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const applied = performance.now();

      // Per pod: when the first refusal was answered (the figure), and when the last request it
      // still served was sent. A busy node answers late; a request sent after the bound and
      // served is what breaks the promise, not an answer that arrives after it.
      const delays = new Map<string, number>();
      const lastServedSent = new Map<string, number>();
      const deadline = applied + 150_000;
      while (delays.size < gateways.length && performance.now() < deadline) {
        for (const pod of gateways.filter((p) => !delays.has(p.name))) {
          const sent = performance.now();
          const { status, body } = await answer(pod.ip);
          if (status === 401 && body.includes('API key revoked')) delays.set(pod.name, (performance.now() - applied) / 1000);
          else if (status === 200) lastServedSent.set(pod.name, (sent - applied) / 1000);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      for (const [pod, seconds] of delays) figure(`${name}: ${pod} refused the revoked key after`, `${seconds.toFixed(1)} s`);
      expect([...delays.keys()].sort(), 'replicas that refuse the key').to.deep.equal(gateways.map((pod) => pod.name).sort());
      for (const [pod, seconds] of lastServedSent) expect(seconds, `${pod}: the last request it served was sent after`).to.be.at.most(REFUSED_WITHIN_SECONDS);

      // The routine apply of the overlay leaves the Secret alone: the key stays revoked.
      const secret = await kubectlJson(['-n', namespace, 'get', 'secret', 'gateway-api-keys']);
      await kubectl(['apply', '-k', OVERLAYS[name].path]);
      const after = await kubectlJson(['-n', namespace, 'get', 'secret', 'gateway-api-keys']);
      expect(after.metadata.resourceVersion).to.equal(secret.metadata.resourceVersion);
      expect(Buffer.from(after.data['keys.yaml'], 'base64').toString()).to.match(/id: revoked[\s\S]*revoked: /);
      for (const pod of gateways) expect((await answer(pod.ip)).status, pod.name).to.equal(401);

      const now = await pods(namespace, 'app.kubernetes.io/name=gateway');
      expect(now.map((pod) => [pod.uid, pod.restarts])).to.deep.equal(gateways.map((pod) => [pod.uid, pod.restarts]));
    });
  }
});
