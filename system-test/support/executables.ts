import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Context } from 'mocha';

/** The path in `overrideVariable` if set, else `name` on PATH or at `fallback`, if executable. */
export function findExecutable(overrideVariable: string, name: string, fallback: string): string | undefined {
  const override = process.env[overrideVariable];
  const candidates =
    override !== undefined && override !== ''
      ? [override]
      : [...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, name)), fallback];
  return candidates.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * What a suite does when a program it needs is missing: pending, with the reason on stderr, or,
 * where CI sets `requireVariable` to 1, a failure naming it.
 */
export function pendingOrRequired(context: Context, requireVariable: string, reason: string): never {
  if (process.env[requireVariable] === '1') throw new Error(`${requireVariable}=1 but ${reason}`);
  console.warn(`      pending: ${reason}`);
  context.skip();
}
