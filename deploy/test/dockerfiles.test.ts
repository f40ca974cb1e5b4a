import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseConfig as parseGatewayConfig } from '../../gateway/src/config';
import { parseConfig as parsePetServiceConfig } from '../../pet-service/src/config';
import { BUILD_ENTRIES } from '../../scripts/build-entries';
import { checkDockerfile, dockerIgnore, type ImageExpectations } from './support/dockerfile';

const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const ignored = dockerIgnore(read('.dockerignore'));
const gatewayDefaults = parseGatewayConfig({}, '');
const petServiceDefaults = parsePetServiceConfig({});
const rootPackage = JSON.parse(read('package.json')) as { engines: { node: string }; devDependencies: Record<string, string> };
/** The runtime `npm ci` installs and every npm script runs on (README, Quick start). */
const pinnedNode = rootPackage.devDependencies.node!;

const images: Record<string, ImageExpectations> = {
  'gateway/Dockerfile': {
    root,
    dockerignore: ignored,
    entry: 'gateway/dist/main',
    buildOutputs: Object.keys(BUILD_ENTRIES),
    ports: [gatewayDefaults.port, gatewayDefaults.adminPort],
    maxOldSpaceMb: 64,
    nodeVersion: pinnedNode,
  },
  'pet-service/Dockerfile': {
    root,
    dockerignore: ignored,
    entry: 'pet-service/dist/main',
    buildOutputs: Object.keys(BUILD_ENTRIES),
    ports: [petServiceDefaults.port, petServiceDefaults.adminPort],
    maxOldSpaceMb: 128,
    nodeVersion: pinnedNode,
  },
};

describe('Dockerfiles (static checks; no Docker engine needed)', () => {
  for (const [path, expected] of Object.entries(images)) {
    describe(path, () => {
      const text = read(path);

      it('keeps every rule: pinned LTS slim base, npm only in the build stage and removed from the runtime stage, copies that exist, non-root, ports, entry point, heap flags', () => {
        expect(checkDockerfile(text, expected)).to.deep.equal([]);
      });

      const broken: [string, (text: string) => string, RegExp][] = [
        ['a COPY of a file the repository lacks', (t) => t.replace('COPY tsconfig.json ./', 'COPY tsconfig.build.json ./'), /COPY tsconfig.build.json: not in the repository/],
        ['a COPY of a file .dockerignore leaves out', (t) => t.replace('COPY tsconfig.json ./', 'COPY README.md ./'), /COPY README.md: excluded by .dockerignore/],
        ['an unpinned base image', (t) => t.replace(/ARG NODE_IMAGE=.*/, 'ARG NODE_IMAGE=node:lts-slim'), /not a pinned node/],
        ['a non-LTS Node line', (t) => t.replace(/ARG NODE_IMAGE=node:\d+/, 'ARG NODE_IMAGE=node:23'), /not an LTS line/],
        ['another Node than the tests run on', (t) => t.replace(/ARG NODE_IMAGE=node:\d+/, 'ARG NODE_IMAGE=node:22'), /not the Node the tests run on/],
        ['no USER', (t) => t.replace(/^USER .*$/m, ''), /no USER/],
        ['USER root', (t) => t.replace(/^USER .*$/m, 'USER root'), /USER root: must be a numeric non-root uid/],
        ['USER 0', (t) => t.replace(/^USER .*$/m, 'USER 0:0'), /USER 0:0/],
        ['a port that is not the default', (t) => t.replace(/^EXPOSE (\d+)/m, 'EXPOSE 3000'), /EXPOSE 3000/],
        ['npm as PID 1', (t) => t.replace(/^ENTRYPOINT .*$/m, 'ENTRYPOINT ["npm", "start"]'), /starts npm, not node|runs ENTRYPOINT/],
        ['tsx instead of the bundle', (t) => t.replace(/^ENTRYPOINT .*$/m, 'ENTRYPOINT ["node", "--import", "tsx", "--max-semi-space-size=4", "--max-old-space-size=64", "src/main.ts"]'), /runtime stage runs ENTRYPOINT|runs no .js/],
        ['an entry point the build does not produce', (t) => t.replace(/dist\/main\.js"\]/, 'dist/server.js"]'), /not a file npm run build produces/],
        ['an entry point the runtime stage does not copy', (t) => t.replace(/^COPY --from=build \/app\/(gateway|pet-service)\/dist .*$/m, ''), /does not copy it from the build stage/],
        ['no heap ceiling', (t) => t.replace(/"--max-old-space-size=\d+", /, ''), /needs --max-old-space-size/],
        ['npm left in the runtime stage', (t) => t.replace(/^RUN rm -rf \/usr\/local\/lib\/node_modules .*$/m, ''), /keeps \/usr\/local\/lib\/node_modules.*\n.*keeps \/usr\/local\/bin\/npm\b.*\n.*keeps \/usr\/local\/bin\/npx/],
        ['npx left in the runtime stage', (t) => t.replace(' /usr/local/bin/npx ', ' '), /^the runtime stage keeps \/usr\/local\/bin\/npx:[^\n]*$/],
        ['a removal that also runs npm', (t) => t.replace(/^RUN rm -rf (\/usr\/local\/lib\/node_modules .*)$/m, 'RUN npm cache clean --force && rm -rf $1'), /the runtime stage runs RUN npm cache clean/],
        ['npm ci in the runtime stage', (t) => t.replace(/^USER /m, 'RUN npm ci --omit=dev\nUSER '), /runtime stage installs packages/],
        ['no proto/ in the build stage', (t) => t.replace(/^COPY proto\/ proto\/$/m, ''), /does not copy proto/],
        ['a secret in ENV', (t) => t.replace('ENV NODE_ENV=production', 'ENV NODE_ENV=production\nENV PAGE_TOKEN_SECRET=s3cret'), /a secret baked into the image/],
      ];
      for (const [what, breakIt, problem] of broken) {
        it(`fails on a copy with ${what}`, () => {
          const copy = breakIt(text);
          expect(copy, 'the copy must differ').to.not.equal(text);
          expect(checkDockerfile(copy, expected).join('\n')).to.match(problem);
        });
      }
    });
  }

  describe('the Node runtime', () => {
    it('is pinned exactly, and these tests run on it: the version of the images and of engines', () => {
      expect(pinnedNode).to.match(/^\d+\.\d+\.\d+$/);
      expect(process.versions.node, 'npm test runs on node_modules/.bin/node').to.equal(pinnedNode);
      const minimum = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(rootPackage.engines.node);
      expect(minimum, 'engines.node is ">=x.y.z"').to.not.equal(null);
      expect(Number(minimum![1]), 'engines names the pinned major').to.equal(Number(pinnedNode.split('.')[0]));
    });
  });

  describe('.dockerignore', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);

    it('sends the generated proto code and the .proto files', () => {
      const proto = tracked.filter((path) => path.startsWith('proto/gen/') || path.endsWith('.proto'));
      expect(proto.length).to.be.greaterThan(0);
      expect(proto.filter(ignored)).to.deep.equal([]);
    });

    it('keeps keys files, tests, node_modules, dist and .git out', () => {
      for (const path of ['gateway/config/demo-keys.yaml', 'gateway/test/unit/config.test.ts', 'node_modules/express/index.js', 'gateway/node_modules/ajv/package.json', 'gateway/dist/main.js', '.git/config', 'gateway/src/.env', 'deploy/base/gateway.yaml']) {
        expect(ignored(path), path).to.equal(true);
      }
    });

    it('matches like Docker: the last matching rule wins, and a parent directory counts', () => {
      const rules = dockerIgnore('*\n!src/\nsrc/**/secret*\n');
      expect(rules('README.md')).to.equal(true);
      expect(rules('src/a/b.ts')).to.equal(false);
      expect(rules('src/a/secret.txt')).to.equal(true);
      expect(rules('src/secret.txt')).to.equal(true);
    });
  });
});
