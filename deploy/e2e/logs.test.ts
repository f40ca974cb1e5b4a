import { expect } from 'chai';
import { clusterOrPending, kubectl, kubectlJson } from './support/kube';
import { deployed, OVERLAYS, type OverlayName } from './support/deployment';

/**
 * Run after the rollout, the revocation and the Sentinel failover, before the drain replaces
 * pods: the services' pods have then lived through what made libraries print on their own (ioredis's
 * `[ioredis] Unhandled error event` with a stack, once a minute per missing Sentinel member and
 * during failovers; a trace exporter's ENOTFOUND for a collector that was never configured).
 */
describe('deploy/e2e: what the services print in the cluster', function () {
  this.timeout(600_000);

  before(async function () {
    clusterOrPending(this);
    await deployed();
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    it(`${name}: every line of every gateway and pet service container is JSON, and none reports a trace collector`, async () => {
      const { namespace } = OVERLAYS[name];
      const pods = await kubectlJson(['-n', namespace, 'get', 'pods', '-l', 'app.kubernetes.io/name in (gateway,pet-service)']);
      const names: string[] = pods.items.map((pod: { metadata: { name: string } }) => pod.metadata.name);
      expect(names.length, 'pods of both services').to.be.at.least(2);
      const notJson: string[] = [];
      let lines = 0;
      for (const pod of names) {
        const text = await kubectl(['-n', namespace, 'logs', pod, '--all-containers']);
        for (const line of text.split('\n').filter((candidate) => candidate !== '')) {
          lines += 1;
          try {
            JSON.parse(line);
          } catch {
            notJson.push(`${pod}: ${line}`);
          }
          if (/ENOTFOUND.*otel|otel-collector/i.test(line)) notJson.push(`${pod}, a collector was called: ${line}`);
        }
      }
      console.log(`      ${name}: ${lines} lines from ${names.length} pods`);
      expect(notJson.slice(0, 20)).to.deep.equal([]);
    });
  }
});
