/**
 * The package's ES module entry: the CommonJS build, re-exported, so that `import` and `require`
 * share one copy of every class (PetServiceClient, InvalidUtf8Error) and `instanceof` holds
 * whichever way a program loads the package.
 */
export * from './index.js';
