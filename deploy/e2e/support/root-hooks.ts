import type { Context } from 'mocha';
import { removeDeploymentFiles } from './deployment';
import { printDiagnostics } from './diagnostics';

/** Mocha's root hooks for the cluster suite (.mocharc.json requires this file). */
export const mochaHooks = {
  async afterEach(this: Context): Promise<void> {
    const test = this.currentTest;
    if (test?.state !== 'failed') return;
    this.timeout(120_000);
    await printDiagnostics(test.fullTitle()).catch((error: unknown) => console.log(`      no diagnostics: ${String(error)}`));
  },
  afterAll(): void {
    removeDeploymentFiles();
  },
};
