import { expect } from 'chai';
import { clusterOrPending, figure, kubectl, pods } from './support/kube';
import { bearer, deployed, OVERLAYS, type OverlayName } from './support/deployment';
import { SteadyLoad } from './support/steady-load';

describe('deploy/e2e: a rollout restart under steady load', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    it(`${name}: restarting the gateway and the pet service at 10 requests/s loses no request`, async () => {
      const { namespace, gatewayUrl } = (await deployed())[name];
      const before = new Set((await pods(namespace, 'app.kubernetes.io/name in (gateway,pet-service)')).map((pod) => pod.uid));
      const load = new SteadyLoad(gatewayUrl, bearer('load'), 10);
      const started = performance.now();
      await kubectl(['-n', namespace, 'rollout', 'restart', 'deployment/gateway', 'deployment/pet-service']);
      await kubectl(['-n', namespace, 'rollout', 'status', 'deployment/gateway', 'deployment/pet-service', '--timeout=300s'], { timeoutMs: 320_000 });
      const rolledSeconds = (performance.now() - started) / 1000;
      // The last old pods drain for SHUTDOWN_DELAY_MS after the rollout reports done: keep the load on.
      await waitForOldPodsGone(namespace, before);
      const summary = await load.stop();
      figure(`${name}: rollout restart of both Deployments took`, `${rolledSeconds.toFixed(1)} s`);
      figure(`${name}: requests during the rollout`, `${summary.sent} sent, ${summary.failed} failed, statuses ${JSON.stringify(summary.byStatus)}`);
      expect(summary.problems).to.deep.equal([]);
      expect(summary.failed).to.equal(0);
      expect(Object.keys(summary.byStatus).filter((status) => !['200', '201'].includes(status))).to.deep.equal([]);
      expect(summary.sent).to.be.above(50);
    });
  }
});

async function waitForOldPodsGone(namespace: string, old: Set<string>): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const left = (await kubectl(['-n', namespace, 'get', 'pods', '-o', 'jsonpath={.items[*].metadata.uid}'])).split(' ').filter((uid) => old.has(uid));
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new Error(`old pods still there: ${left.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
