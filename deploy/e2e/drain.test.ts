import { expect } from 'chai';
import { clusterOrPending, figure, kubectl, kubectlJson, tryKubectl } from './support/kube';
import { deployed, OVERLAYS } from './support/deployment';

/* eslint-disable @typescript-eslint/no-explicit-any -- objects as the API returns them */

/** Every pod of a workload that has a PodDisruptionBudget: "namespace/app" -> pod uids. */
async function podsByBudget(): Promise<Map<string, { allowed: number; uids: Set<string> }>> {
  const budgets = await kubectlJson(['get', 'pdb', '-A']);
  const all = await kubectlJson(['get', 'pods', '-A']);
  const byBudget = new Map<string, { allowed: number; uids: Set<string> }>();
  for (const pdb of budgets.items) {
    const app = pdb.spec.selector.matchLabels['app.kubernetes.io/name'];
    const uids = all.items
      .filter((pod: any) => pod.metadata.namespace === pdb.metadata.namespace && pod.metadata.labels?.['app.kubernetes.io/name'] === app)
      .filter((pod: any) => pod.metadata.deletionTimestamp === undefined)
      .map((pod: any) => pod.metadata.uid);
    byBudget.set(`${pdb.metadata.namespace}/${app}`, { allowed: pdb.spec.maxUnavailable, uids: new Set(uids) });
  }
  return byBudget;
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

  it('evicts at most maxUnavailable pods of each workload, and the drain stops there', async () => {
    await deployed();
    for (const { namespace } of Object.values(OVERLAYS)) await kubectl(['-n', namespace, 'wait', '--for=condition=Ready', 'pod', '-l', 'app.kubernetes.io/part-of=petstore', '--timeout=180s']);
    const node = (await kubectl(['get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
    const before = await podsByBudget();
    // One node: an evicted pod's replacement cannot be scheduled, so the budgets must stop the drain.
    const drain = await tryKubectl(['drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=45s'], { timeoutMs: 120_000 });
    const after = await podsByBudget();
    const refusals = (drain.stderr + drain.stdout).match(/would violate the pod's disruption budget/g) ?? [];
    figure('drain: eviction refusals by a budget', refusals.length);
    expect(drain.code, 'the drain did not complete').to.not.equal(0);
    expect(refusals.length).to.be.above(0);
    const evictedTooMany: string[] = [];
    for (const [workload, { allowed, uids }] of before) {
      const evicted = [...uids].filter((uid) => !after.get(workload)!.uids.has(uid)).length;
      figure(`drain: ${workload} pods evicted`, `${evicted} of ${uids.size} (budget: ${allowed})`);
      if (evicted > allowed) evictedTooMany.push(`${workload}: ${evicted} evicted, budget ${allowed}`);
    }
    expect(evictedTooMany).to.deep.equal([]);
    // And it did evict: budgets that allowed one gave one (a budget's pods turned unready by a
    // dependency's eviction, such as the pet service's on MongoDB's, allow none, rightly).
    const evictions = [...before].reduce((sum, [workload, { uids }]) => sum + [...uids].filter((uid) => !after.get(workload)!.uids.has(uid)).length, 0);
    expect(evictions).to.be.above(0);
  });
});
