import { killLeftoverServices } from './service-process';

/**
 * Mocha's root hooks for `npm test` (.mocharc.json requires this file). After the last suite, any
 * service process still running was left by a suite that failed before it could stop it: it is
 * killed, and the run fails naming it, rather than mocha waiting on it for as long as CI lets it.
 */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    const left = await killLeftoverServices();
    if (left.length > 0) throw new Error(`service processes left running by a suite, now killed: ${left.join(', ')}`);
  },
};
