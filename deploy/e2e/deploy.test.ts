import { expect } from 'chai';
import { clusterOrPending, kubectlJson, pods } from './support/kube';
import { deployed, OVERLAYS, type OverlayName } from './support/deployment';

/** The time every pod of an overlay has to be Ready, from `kubectl apply -k` (docs/testing.md). */
const READY_WITHIN_SECONDS = 180;

describe('deploy/e2e: both overlays deployed by the documented steps', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    it(`${name}: the steps complete and every pod is Ready within ${READY_WITHIN_SECONDS} s`, async () => {
      const deployment = (await deployed())[name];
      expect(deployment.readySeconds).to.be.below(READY_WITHIN_SECONDS);
      const all = await pods(deployment.namespace);
      expect(all.filter((pod) => !pod.ready).map((pod) => pod.name)).to.deep.equal([]);
      const expected = name === 'production' ? { gateway: 3, 'pet-service': 3, mongodb: 3, redis: 3 } : { gateway: 1, 'pet-service': 1, mongodb: 3, redis: 1 };
      for (const [app, count] of Object.entries(expected)) {
        expect(all.filter((pod) => pod.labels['app.kubernetes.io/name'] === app), app).to.have.length(count);
      }
    });
  }

  it('production: the MongoDB zone spread schedules every member on a node without a zone label', async () => {
    await deployed();
    const nodes = await kubectlJson(['get', 'nodes']);
    for (const node of nodes.items) expect(node.metadata.labels, node.metadata.name).to.not.have.property('topology.kubernetes.io/zone');
    const set = await kubectlJson(['-n', 'petstore', 'get', 'statefulset', 'mongodb']);
    const spread = set.spec.template.spec.topologySpreadConstraints;
    expect(spread.map((c: { topologyKey: string }) => c.topologyKey)).to.deep.equal(['topology.kubernetes.io/zone']);
    const members = await pods('petstore', 'app.kubernetes.io/name=mongodb');
    expect(members.map((pod) => [pod.name, pod.phase])).to.deep.equal([
      ['mongodb-0', 'Running'],
      ['mongodb-1', 'Running'],
      ['mongodb-2', 'Running'],
    ]);
  });
});
