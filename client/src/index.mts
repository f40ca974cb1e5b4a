/**
 * The package's ES module entry for Node: the CommonJS build, re-exported, so that `import` and
 * `require` share one PetstoreError class and `instanceof` holds whichever way a program loads
 * the package.
 */
export * from './index.js';
