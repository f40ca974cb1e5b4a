import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { expect } from 'chai';
import { service as healthService } from 'grpc-health-check';
import { stringify } from 'yaml';
import { sha256Hex } from '../../gateway/src/keys/api-keys';
import { expectWithinContract, fetchWithinContract } from '../../system-test/support/openapi-validator';
import { waitFor } from '../../system-test/support/wait-for';
import { type KubeObject, kubectlOrSkip, render } from './support/kubectl';
import { type ContainerPlan, podAsContainer } from './support/pod-as-container';
import { type BuiltImage, buildImages, containerLogs, imageName, podman, podmanOrSkip, type Service, SERVICES } from './support/podman';
import { SecretVolume } from './support/secret-volume';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests and parsed log lines */

const ROOT = join(__dirname, '..', '..');

/** The image budgets in docs/deploy.md's table ("| `gateway` | 330 MB | ..."). */
function budgets(): Record<Service, number> {
  const doc = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
  return Object.fromEntries(
    SERVICES.map((service) => {
      const row = new RegExp(`^\\| \`${service}\` \\| (\\d+) MB \\|`, 'm').exec(doc);
      if (row === null) throw new Error(`docs/deploy.md has no size budget row for ${service}`);
      return [service, Number(row[1])];
    }),
  ) as Record<Service, number>;
}

/** Keys the test issues, by plan: the keys file holds only their digests. */
const SECRETS = { free: `ct-free-${randomBytes(8).toString('hex')}`, enterprise: `ct-enterprise-${randomBytes(8).toString('hex')}`, added: `ct-added-${randomBytes(8).toString('hex')}` };

function keysFile(ids: readonly (keyof typeof SECRETS)[]): string {
  return stringify({
    keys: ids.map((id) => ({
      id: `ct-${id}`,
      sha256: sha256Hex(SECRETS[id]),
      plan: id === 'enterprise' ? 'enterprise' : 'free',
      ...(id === 'enterprise' ? { limits: { perMinute: 100000, perDay: 1000000 } } : {}),
    })),
  });
}

/**
 * A kustomize overlay of deploy/base, as docs/deploy.md has a deployment write one: the images
 * built here, the keys file replacing the placeholder Secret. One setting differs from the base:
 * MONGODB_URI is empty (the in-memory store), as no MongoDB runs beside the containers.
 */
function writeOverlay(dir: string): void {
  writeFileSync(join(dir, 'keys.yaml'), keysFile(['free', 'enterprise']));
  const image = (service: Service) => {
    const [name, tag] = imageName(service).split(/:(?=[^:]+$)/);
    return { name: `petstore-${service}`, newName: name, newTag: tag };
  };
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: 'petstore',
      resources: [relative(dir, join(ROOT, 'deploy', 'base'))],
      images: SERVICES.map(image),
      secretGenerator: [{ name: 'gateway-api-keys', behavior: 'replace', files: ['keys.yaml=keys.yaml'] }],
      configMapGenerator: [{ name: 'pet-service-settings', behavior: 'merge', literals: ['MONGODB_URI='] }],
    }),
  );
}

function secretFiles(objects: readonly KubeObject[], name: string): Record<string, string> {
  const secret = objects.find((object) => object.kind === 'Secret' && object.metadata.name === name) as any;
  if (secret === undefined) throw new Error(`no Secret ${name} rendered`);
  return Object.fromEntries(Object.entries(secret.data as Record<string, string>).map(([file, value]) => [file, Buffer.from(value, 'base64').toString('utf8')]));
}

interface HealthStub {
  check(request: { service: string }, options: { deadline: number }, callback: (error: ServiceError | null, response?: { status: string }) => void): void;
  close(): void;
}
const HealthClient = makeGenericClientConstructor(healthService, 'Health');

/** One run of a readiness probe (httpGet or grpc, as the manifests declare them) against a published port. */
async function probeOnce(probe: any, hostPort: (port: string | number) => number): Promise<boolean> {
  if (probe.httpGet !== undefined) {
    const response = await fetch(`http://127.0.0.1:${hostPort(probe.httpGet.port)}${probe.httpGet.path}`).catch(() => undefined);
    await response?.body?.cancel();
    return response?.status === 200;
  }
  if (probe.grpc !== undefined) {
    const health = new HealthClient(`127.0.0.1:${hostPort(probe.grpc.port)}`, credentials.createInsecure()) as never as HealthStub;
    try {
      return await new Promise<boolean>((resolve) =>
        health.check({ service: probe.grpc.service ?? '' }, { deadline: Date.now() + 1000 }, (error, response) => resolve(error === null && response?.status === 'SERVING')),
      );
    } finally {
      health.close();
    }
  }
  throw new Error(`probe ${JSON.stringify(probe)}: neither httpGet nor grpc`);
}

/** Every pet, page by page (following `Link: rel="next"`), each page checked against the contract. */
async function listAll(baseUrl: string, headers: Record<string, string>, firstPage = '/v1/pets?limit=100'): Promise<{ name: string }[]> {
  const pets: { name: string }[] = [];
  let next: string | undefined = firstPage;
  while (next !== undefined) {
    const page = await fetchWithinContract(`${baseUrl}${next}`, { headers });
    expect(page.status).to.equal(200);
    pets.push(...((await page.json()) as { name: string }[]));
    next = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
  }
  return pets;
}

/** A container the suite started: its plan, and the host ports its container ports are published on. */
interface Running {
  readonly name: string;
  readonly plan: ContainerPlan;
  hostPort(port: string | number): number;
}

describe('the images, run as deploy/base runs them (podman, runc)', function () {
  this.timeout(60_000);
  const suffix = `${process.pid}-${randomBytes(3).toString('hex')}`;
  const network = `petstore-ct-${suffix}`;
  const started: string[] = [];
  let networkCreated = false;
  let overlay: string | undefined;
  let keysVolume: SecretVolume | undefined;
  let built: Record<Service, BuiltImage>;
  const running = {} as Record<Service, Running>;
  let baseUrl = '';

  async function start(objects: readonly KubeObject[], service: Service): Promise<Running> {
    const name = `petstore-ct-${suffix}-${service}`;
    const secretVolume = (secret: string) => {
      if (keysVolume !== undefined) throw new Error('one Secret volume expected: the keys file');
      keysVolume = new SecretVolume(secretFiles(objects, secret));
      return keysVolume.path;
    };
    const plan = podAsContainer(objects, service, { image: imageName(service), name, network, secretVolume });
    started.push(name);
    await podman(['run', '--detach', ...plan.args]);
    const published = new Map<number, number>();
    for (const port of Object.values(plan.ports)) {
      const address = (await podman(['port', name, `${port}/tcp`])).trim();
      published.set(port, Number(address.split(':').pop()));
    }
    const hostPort = (port: string | number) => published.get(typeof port === 'number' ? port : plan.ports[port]!)!;
    try {
      await waitFor(() => probeOnce(plan.readinessProbe, hostPort), 30_000);
    } catch (error) {
      const logs = await containerLogs(name).catch((reason: unknown) => [String(reason)]);
      throw new Error(`${service} never passed its readiness probe; its log:\n${logs.join('\n')}`, { cause: error });
    }
    return { name, plan, hostPort };
  }

  before(async function () {
    this.timeout(30 * 60_000);
    podmanOrSkip(this);
    const kubectl = kubectlOrSkip(this);
    built = await buildImages();
    overlay = mkdtempSync(join(tmpdir(), 'petstore-overlay-'));
    writeOverlay(overlay);
    const objects = render(kubectl, overlay);
    await podman(['network', 'create', network]);
    networkCreated = true;
    running['pet-service'] = await start(objects, 'pet-service');
    running.gateway = await start(objects, 'gateway');
    baseUrl = `http://127.0.0.1:${running.gateway.hostPort('http')}`;
  });

  after(async function () {
    this.timeout(120_000);
    for (const name of started.reverse()) await podman(['rm', '--force', '--time', '0', name]).catch(() => undefined);
    if (networkCreated) await podman(['network', 'rm', network]).catch(() => undefined);
    keysVolume?.remove();
    if (overlay !== undefined) rmSync(overlay, { recursive: true, force: true });
  });

  describe('the images', () => {
    it('are within the size budgets of docs/deploy.md', () => {
      const budget = budgets();
      for (const service of SERVICES) {
        expect(built[service].megabytes, `${imageName(service)}: ${built[service].megabytes} MB against a budget of ${budget[service]} MB`).to.be.at.most(budget[service]);
        expect(built[service].aboveBaseMegabytes).to.be.greaterThan(0);
      }
    });

    it("run as the user the manifests name, the image's own USER", async () => {
      for (const service of SERVICES) {
        const { uid, gid } = running[service].plan.user;
        expect((await podman(['image', 'inspect', '--format', '{{ .Config.User }}', imageName(service)])).trim()).to.equal(`${uid}:${gid}`);
      }
    });

    it('hold node and the bundles only: no npm, npx or corepack, no TypeScript sources or source text, no keys file, no build-time CA or npmrc, no dangling link', async () => {
      const script = `
        const fs = require('node:fs');
        const exists = (path) => { try { fs.lstatSync(path); return true; } catch { return false; } };
        const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
          entry.isDirectory() ? (entry.name === 'node_modules' ? [] : walk(dir + '/' + entry.name)) : [dir + '/' + entry.name]);
        const files = walk('/app');
        console.log(JSON.stringify({
          present: ['/usr/local/bin/npm', '/usr/local/bin/npx', '/usr/local/bin/corepack', '/usr/local/lib/node_modules',
            '/usr/local/etc/npmrc', '/run/petstore-build', '/root/.npm', '/app/gateway/config'].filter(exists),
          typescript: files.filter((file) => /\\.(ts|mts|cts)$/.test(file) && !file.endsWith('.d.ts')),
          maps: files.filter((file) => file.endsWith('.map')).map((file) => ({ file, keys: Object.keys(JSON.parse(fs.readFileSync(file, 'utf8'))) })),
          keyFiles: files.filter((file) => /keys?\\.(ya?ml|json)$/.test(file)),
          dangling: fs.readdirSync('/app', { recursive: true }).map((path) => '/app/' + path)
            .filter((path) => fs.lstatSync(path).isSymbolicLink() && !fs.existsSync(path)),
        }));`;
      for (const service of SERVICES) {
        const facts = JSON.parse(await podman(['run', '--rm', '--network', 'none', '--entrypoint', 'node', imageName(service), '-e', script]));
        expect(facts.present, service).to.deep.equal([]);
        expect(facts.typescript, service).to.deep.equal([]);
        expect(facts.maps.map((map: any) => map.file), service).to.include(`/app/${service}/dist/main.js.map`);
        for (const map of facts.maps) expect(map.keys, map.file).to.not.include('sourcesContent');
        expect(facts.keyFiles, service).to.deep.equal([]);
        expect(facts.dangling, service).to.deep.equal([]);
      }
    });
  });

  describe('running as the manifests do', () => {
    it('as uid 1000, read-only, without capabilities or new privileges, within the memory limit', async () => {
      const script = `
        const fs = require('node:fs');
        const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').map((line) => line.split(/:\\s+/)));
        const writes = ['/app/probe', '/tmp/probe', '/home/node/probe'].map((path) => { try { fs.writeFileSync(path, ''); return 'written'; } catch (error) { return error.code; } });
        const limit = ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'].filter((path) => fs.existsSync(path)).map((path) => fs.readFileSync(path, 'utf8').trim())[0];
        console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), capEff: status.CapEff, capBnd: status.CapBnd, noNewPrivs: status.NoNewPrivs, seccomp: status.Seccomp, writes, limit }));`;
      const limits: Record<Service, number> = { gateway: 192 * 2 ** 20, 'pet-service': 256 * 2 ** 20 };
      for (const service of SERVICES) {
        const facts = JSON.parse(await podman(['exec', running[service].name, 'node', '-e', script]));
        expect(facts, service).to.deep.include({ uid: 1000, gid: 1000, capEff: '0000000000000000', capBnd: '0000000000000000', noNewPrivs: '1', seccomp: '2' });
        expect(facts.writes, service).to.deep.equal(['EROFS', 'EROFS', 'EROFS']);
        expect(Number(facts.limit), service).to.equal(limits[service]);
      }
    });

    it('serve the HTTP contract: create, read, list with paging, idempotent replay, refusals', async () => {
      const enterprise = { authorization: `Bearer ${SECRETS.enterprise}`, 'content-type': 'application/json' };
      const document = await fetchWithinContract(`${baseUrl}/v1/openapi.json`);
      expect(((await document.json()) as { openapi: string }).openapi).to.equal('3.1.0');

      const created = await fetchWithinContract(`${baseUrl}/v1/pets`, { method: 'POST', headers: enterprise, body: '{"name":"Rex","categoryId":9223372036854775807}' });
      expect(created.status).to.equal(201);
      const text = await created.text();
      expect(text).to.include('"categoryId":9223372036854775807');
      const id = /"id":(\d+)/.exec(text)![1]!;
      expect(created.headers.get('location')).to.equal(`/v1/pets/${id}`);

      const read = await fetchWithinContract(`${baseUrl}/v1/pets/${id}`, { headers: enterprise });
      expect(read.status).to.equal(200);
      expect(read.headers.get('deprecation')).to.not.equal(null);

      for (let i = 0; i < 3; i++) {
        const reply = await fetchWithinContract(`${baseUrl}/v1/pets`, { method: 'POST', headers: enterprise, body: JSON.stringify({ name: `page-${i}`, categoryId: 2 }) });
        expect(reply.status).to.equal(201);
      }
      const names = (await listAll(baseUrl, enterprise, '/v1/pets?limit=2')).map((pet) => pet.name);
      expect(names).to.include.members(['Rex', 'page-0', 'page-1', 'page-2']);

      const idempotent = { ...enterprise, 'idempotency-key': `ct-${suffix}` };
      const first = await fetchWithinContract(`${baseUrl}/v1/pets`, { method: 'POST', headers: idempotent, body: '{"name":"Once","categoryId":3}' });
      const replay = await fetchWithinContract(`${baseUrl}/v1/pets`, { method: 'POST', headers: idempotent, body: '{"name":"Once","categoryId":3}' });
      expect([first.status, replay.status]).to.deep.equal([201, 201]);
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(await replay.text()).to.equal(await first.text());

      const refusals: [RequestInit, string, number][] = [
        [{ headers: { authorization: 'Bearer not-a-key' } }, '/v1/pets', 401],
        [{ method: 'POST', headers: enterprise, body: '{"name":"","categoryId":1}' }, '/v1/pets', 400],
        [{ method: 'POST', headers: { ...enterprise, 'content-type': 'text/plain' }, body: 'x' }, '/v1/pets', 415],
        [{ headers: enterprise }, '/v1/pets/999999999', 404],
        [{ method: 'DELETE', headers: enterprise }, '/v1/pets', 405],
      ];
      for (const [init, path, status] of refusals) expect((await fetchWithinContract(`${baseUrl}${path}`, init)).status, `${init.method ?? 'GET'} ${path}`).to.equal(status);
    });

    it('serve mixed concurrent traffic within the contract, losing no create', async () => {
      const enterprise = { authorization: `Bearer ${SECRETS.enterprise}`, 'content-type': 'application/json' };
      const batch = `mixed-${suffix}`;
      const requests: [string, RequestInit][] = [];
      for (let i = 0; i < 40; i++) requests.push(['/v1/pets', { method: 'POST', headers: enterprise, body: JSON.stringify({ name: `${batch}-${i}`, categoryId: i + 1 }) }]);
      for (let i = 0; i < 20; i++) requests.push([`/v1/pets?limit=${(i % 100) + 1}`, { headers: enterprise }]);
      for (let i = 0; i < 10; i++) requests.push(['/v1/pets', { method: 'POST', headers: enterprise, body: '{"name":' }]);
      for (let i = 0; i < 10; i++) requests.push(['/v1/pets/abc', { headers: enterprise }]);
      for (let i = 0; i < 5; i++) requests.push(['/v1/pets', { headers: { authorization: `Bearer wrong-${i}` } }]);
      const replies = await Promise.all(
        requests.map(async ([path, init]) => {
          const response = await fetch(`${baseUrl}${path}`, init);
          const text = await response.text();
          expectWithinContract(init.method ?? 'GET', `${baseUrl}${path}`, { status: response.status, headers: response.headers, text });
          return response.status;
        }),
      );
      expect(replies.filter((status) => status >= 500)).to.deep.equal([]);
      expect(replies.slice(0, 40)).to.deep.equal(Array(40).fill(201));
      const names = (await listAll(baseUrl, enterprise)).map((pet) => pet.name).filter((name) => name.startsWith(`${batch}-`));
      expect(names).to.have.length(40);
      expect(new Set(names).size).to.equal(40);
    });

    it("limit a free key to its plan's 60 requests a minute", async () => {
      const free = { authorization: `Bearer ${SECRETS.free}` };
      // A window may end during the burst: within two windows' worth, one request must be refused.
      let refused: Response | undefined;
      for (let i = 0; i < 121 && refused === undefined; i++) {
        const response = await fetchWithinContract(`${baseUrl}/v1/pets?limit=1`, { headers: free });
        if (response.status === 429) refused = response;
        else expect(response.status).to.equal(200);
      }
      expect(refused, 'no 429 within 121 requests').to.not.equal(undefined);
      expect(((await refused!.json()) as { code: string }).code).to.equal('rate_limited');
      expect(refused!.headers.get('x-ratelimit-limit')).to.equal('60');
    });

    it('serve the API reference at /docs with every asset it links to', async () => {
      const page = await fetch(`${baseUrl}/docs`);
      expect(page.status).to.equal(200);
      const files = [...(await page.text()).matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]!);
      expect(files).to.have.length(4);
      for (const file of files) {
        const asset = await fetch(`${baseUrl}${file}`);
        await asset.body?.cancel();
        expect(asset.status, file).to.equal(200);
      }
    });

    it('follow the keys Secret as the kubelet updates it: a key added answers, a key removed is refused, no restart', async () => {
      const status = async (secret: string) => {
        const response = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${secret}` } });
        await response.body?.cancel();
        return response.status;
      };
      expect(await status(SECRETS.added)).to.equal(401);
      const restarts = (await podman(['inspect', '--format', '{{ .RestartCount }} {{ .State.StartedAt }}', running.gateway.name])).trim();
      const updated = Date.now();
      keysVolume!.update({ 'keys.yaml': keysFile(['enterprise', 'added']) });
      await waitFor(async () => (await status(SECRETS.added)) === 200 && (await status(SECRETS.free)) === 401, 15_000, () => 'the gateway did not follow the updated Secret');
      console.log(`      the gateway followed the Secret update in ${Date.now() - updated} ms`);
      expect(await status(SECRETS.enterprise)).to.equal(200);
      expect((await podman(['inspect', '--format', '{{ .RestartCount }} {{ .State.StartedAt }}', running.gateway.name])).trim()).to.equal(restarts);
    });

    it('stop on SIGTERM, gateway first then pet service: serving through the drain delay, exit 0, JSON log lines only', async function () {
      this.timeout(120_000);
      const gateway = running.gateway;
      const delayMs = Number(gateway.plan.env.SHUTDOWN_DELAY_MS);
      expect(delayMs).to.be.greaterThan(0);
      const exited = (name: string) => podman(['wait', name]).then((code) => Number(code.trim()));
      const gatewayExit = exited(gateway.name);
      const signalled = Date.now();
      await podman(['kill', '--signal', 'SIGTERM', gateway.name]);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${gateway.hostPort('admin')}/readyz`)).status === 503, delayMs, () => '/readyz still passes');
      const during = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${SECRETS.enterprise}` } });
      await during.body?.cancel();
      expect(Date.now() - signalled, 'the request was served within the delay').to.be.below(delayMs);
      expect(during.status).to.equal(200);
      expect(await gatewayExit).to.equal(0);
      expect(Date.now() - signalled).to.be.at.least(delayMs);

      const petService = running['pet-service'];
      const petServiceExit = exited(petService.name);
      await podman(['kill', '--signal', 'SIGTERM', petService.name]);
      expect(await petServiceExit).to.equal(0);

      for (const service of SERVICES) {
        const parsed = (await containerLogs(running[service].name)).map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new Error(`${service} logged a line that is not JSON: ${line}`);
          }
        });
        expect(parsed.filter((line) => Number(line.level) >= 50), `${service}: error lines`).to.deep.equal([]);
        expect(parsed.find((line) => line.msg === 'shutting down'), service).to.deep.include({ signal: 'SIGTERM', delayMs });
        expect(parsed.at(-1), service).to.deep.include({ msg: 'stopped', code: 0 });
      }
    });
  });
});
