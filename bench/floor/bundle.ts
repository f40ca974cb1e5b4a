import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = join(__dirname, '..', '..');

/** Where the floor's apps are bundled, relative to the repository root. */
export const FLOOR_OUT_DIR = join('.bench', 'floor');

/** Only the workspace's own code is bundled, as scripts/build.ts does; npm packages stay `require`s. */
const externalPackages: Plugin = {
  name: 'external-packages',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@petstore/') ? undefined : { path: args.path, external: true }));
  },
};

/** Bundles `bench/floor/<entry>.ts` files into {@link FLOOR_OUT_DIR}, as `npm run build` bundles the services. */
export async function bundleFloorApps(entries: readonly string[]): Promise<void> {
  if (entries.length === 0) return;
  mkdirSync(join(ROOT, FLOOR_OUT_DIR), { recursive: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(entries.map((entry) => [entry, join(ROOT, 'bench', 'floor', `${entry}.ts`)])),
    outdir: join(ROOT, FLOOR_OUT_DIR),
    bundle: true,
    platform: 'node',
    target: 'node26',
    format: 'cjs',
    sourcemap: true,
    logLevel: 'warning',
    logOverride: { 'require-resolve-not-external': 'silent' },
    plugins: [externalPackages],
  });
}
