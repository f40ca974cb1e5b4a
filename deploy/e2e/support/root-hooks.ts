import { removeDeploymentFiles } from './deployment';

/** Mocha's root hooks for the cluster suite (.mocharc.json requires this file). */
export const mochaHooks = {
  afterAll(): void {
    removeDeploymentFiles();
  },
};
