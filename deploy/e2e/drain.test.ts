import { expect } from 'chai';
import { clusterOrPending, figure, kubectl, kubectlJson, tryKubectl } from './support/kube';
import { deployed } from './support/deployment';

/* eslint-disable @typescript-eslint/no-explicit-any -- PodDisruptionBudgets as the API returns them */

/** Every budget's healthy pods below what it requires, as "namespace/name: healthy < desired". */
async function budgetsBroken(): Promise<string[]> {
  const budgets = await kubectlJson(['get', 'pdb', '-A']);
  return budgets.items
    .filter((pdb: any) => pdb.status.currentHealthy < pdb.status.desiredHealthy)
    .map((pdb: any) => `${pdb.metadata.namespace}/${pdb.metadata.name}: ${pdb.status.currentHealthy} < ${pdb.status.desiredHealthy}`);
}

describe('deploy/e2e: kubectl drain honours the PodDisruptionBudgets', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  after(async () => {
    const node = (await kubectl(['get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
    await kubectl(['uncordon', node]);
  });

  it('evicts no more pods of a workload than its budget allows, and stops there', async () => {
    await deployed();
    const node = (await kubectl(['get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
    expect(await budgetsBroken()).to.deep.equal([]);
    const broken = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const problem of await budgetsBroken()) broken.add(problem);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    // One node: an evicted pod's replacement cannot be scheduled, so the budgets must stop the drain.
    const drain = await tryKubectl(['drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=45s'], { timeoutMs: 120_000 });
    watching = false;
    await watcher;
    const refusals = (drain.stderr + drain.stdout).match(/would violate the pod's disruption budget/g) ?? [];
    figure('drain: eviction refusals by a budget', refusals.length);
    expect(drain.code, 'the drain did not complete').to.not.equal(0);
    expect(refusals.length).to.be.above(0);
    expect([...broken]).to.deep.equal([]);
    // Production's three-replica workloads each lost exactly one pod, the budget's one.
    const running = await kubectlJson(['-n', 'petstore', 'get', 'pods', '--field-selector', 'status.phase=Running']);
    const count = (app: string) => running.items.filter((pod: any) => pod.metadata.labels['app.kubernetes.io/name'] === app && pod.metadata.deletionTimestamp === undefined).length;
    for (const app of ['gateway', 'pet-service', 'mongodb', 'redis']) expect(count(app), app).to.equal(2);
  });
});
