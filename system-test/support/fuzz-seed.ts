/**
 * The seed of every fast-check property, so that a run is repeatable: the same cases in CI as on
 * a developer's machine. Set FUZZ_SEED to explore other cases; a failure prints the seed and the
 * path that reproduce it, and a case it finds is then kept as a fixed test.
 */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261123);
