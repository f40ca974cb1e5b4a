import { build } from 'esbuild';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const ENTRY = join(__dirname, '../src/index.ts');

/**
 * The client as one ES module for browsers: everything bundled, for the `browser` platform, so a
 * Node-only import fails the build instead of the page. The package's `browser` export condition
 * points at it (`dist/browser/petstore-client.mjs`, written by `npm run build`), typed by the ES
 * module build's declarations: the same source, the same API.
 */
export async function bundleForBrowser(): Promise<string> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

if (require.main === module) {
  void bundleForBrowser().then((code) => {
    const out = join(__dirname, '../dist/browser');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'petstore-client.mjs'), code);
  });
}
