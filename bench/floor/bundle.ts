import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bundle } from '../../scripts/build';

const ROOT = join(__dirname, '..', '..');

/** Where the floor's apps are bundled, relative to the repository root. */
export const FLOOR_OUT_DIR = join('.bench', 'floor');

/** Bundles `bench/floor/<entry>.ts` files into {@link FLOOR_OUT_DIR}, exactly as `npm run build` bundles the services. */
export async function bundleFloorApps(entries: readonly string[]): Promise<void> {
  if (entries.length === 0) return;
  mkdirSync(join(ROOT, FLOOR_OUT_DIR), { recursive: true });
  await bundle(Object.fromEntries(entries.map((entry) => [entry, join('bench', 'floor', `${entry}.ts`)])), join(ROOT, FLOOR_OUT_DIR));
}
