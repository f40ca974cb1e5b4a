/**
 * `npm run sbom`: a CycloneDX SBOM of each service's production dependencies
 * (`@cyclonedx/cyclonedx-npm`, into `sbom/<service>.cdx.json`), then the licence policy on each
 * (scripts/licence-policy.ts): exits 1, listing the offenders, when a dependency's licence is not
 * on `.ci/allowed-licences.txt`.
 *
 * Not `npm sbom`: with `--omit dev` (npm 11.19) it leaves out every package that is also another
 * workspace's devDependency, @grpc/grpc-js and ioredis among them (docs/security.md).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { licenceProblems, parseAllowList, type SbomComponent } from './licence-policy';

const ROOT = join(__dirname, '..');
const SERVICES = ['gateway', 'pet-service'] as const;

const allowed = parseAllowList(readFileSync(join(ROOT, '.ci', 'allowed-licences.txt'), 'utf8'));
mkdirSync(join(ROOT, 'sbom'), { recursive: true });
let failed = false;
for (const service of SERVICES) {
  const path = join(ROOT, 'sbom', `${service}.cdx.json`);
  execFileSync(
    'npx',
    ['--no-install', 'cyclonedx-npm', '--omit', 'dev', '--workspace', service, '--flatten-components', '--output-reproducible', '--output-file', path],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const components = (JSON.parse(readFileSync(path, 'utf8')) as { components?: SbomComponent[] }).components ?? [];
  const problems = licenceProblems(components, allowed);
  console.log(`${service}: ${components.length} components in ${path}; ${problems.length === 0 ? 'every licence allowed' : `${problems.length} not allowed`}`);
  for (const problem of problems) console.error(`  ${service}: ${problem}`);
  failed ||= problems.length > 0;
}
process.exit(failed ? 1 : 0);
