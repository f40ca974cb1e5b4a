import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { startHttpUpstream, type HttpUpstream } from './support/http-upstream';
import { freePort } from './support/redis-server';
import { type ServiceProcess, startService } from './support/service-process';

const SECRET = 'proxy-streaming-secret';
const TOTAL = 200 * 1024 * 1024;
/** First, so that what the first proxied request loads and compiles is not counted. */
const WARM_UP = 4 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 7);
/** The heap sizing of docs/operations.md: V8 collects before garbage piles up. */
const PRODUCTION_HEAP = ['--max-semi-space-size=4', '--max-old-space-size=64'];
/**
 * A gateway that held the body would grow by at least its 200 MB. Streaming grows by a few tens of
 * MB whatever the size (buffers V8 has not collected yet), more on some Node lines than others:
 * the bound sits well between the two.
 */
const MAX_GROWTH_MB = 100;

/** Peak RSS (VmHWM) since the last reset, in MB. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/**
 * The gateway as its own process (`main.ts`, ROUTES_FILE), so that its memory can be measured:
 * 200 MB pass through in each direction while its peak RSS barely moves, and an upstream that is
 * down is reported by /readyz without failing readiness.
 */
describe('proxied routes in the gateway process', function () {
  this.timeout(60_000);
  let upstream: HttpUpstream;
  let petService: ServiceProcess;
  let gateway: ServiceProcess;
  let downPort: number;

  before(async function () {
    if (process.platform !== 'linux') this.skip(); // reads /proc
    upstream = await startHttpUpstream();
    downPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'proxy-streaming-'));
    const keysFile = join(dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ id: 'streamer', sha256: sha256Hex(SECRET), plan: 'enterprise', limits: { perMinute: 1e6, perDay: 1e6 } }] }));
    const routesFile = join(dir, 'routes.yaml');
    writeFileSync(
      routesFile,
      [
        'routes:',
        '  - prefix: /v1/store/files',
        `    upstream: ${upstream.url}`,
        '    methods: [GET, PUT]',
        '    timeoutMs: 10000',
        '  - prefix: /v1/store/down',
        `    upstream: http://127.0.0.1:${downPort}`,
        '    methods: [GET]',
        '    timeoutMs: 1000',
        '',
      ].join('\n'),
    );
    petService = await startService('pet-service', { MONGODB_URI: '' });
    gateway = await startService(
      'gateway',
      { PET_SERVICE_ADDR: `127.0.0.1:${petService.port}`, API_KEYS_FILE: keysFile, ROUTES_FILE: routesFile, REDIS_URL: '' },
      { nodeFlags: PRODUCTION_HEAP },
    );
  });

  /** PUTs `size` bytes through the gateway, as fast as it takes them; resolves with the status and the upstream's count. */
  async function upload(size: number): Promise<string> {
    const request = httpRequest(`http://127.0.0.1:${gateway.port}/v1/store/files/upload`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${SECRET}`, 'content-length': String(size) },
    });
    const reply = new Promise<string>((resolve, reject) => {
      request.on('response', (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve(`${response.statusCode} ${text}`));
      });
      request.on('error', reject);
    });
    for (let sent = 0; sent < size; sent += CHUNK.length) {
      if (!request.write(CHUNK)) await new Promise((resolve) => request.once('drain', resolve));
    }
    request.end();
    return reply;
  }

  /** GETs `size` bytes from the upstream through the gateway; resolves with the bytes received. */
  function download(size: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const request = httpRequest(`http://127.0.0.1:${gateway.port}/v1/store/files/download?bytes=${size}`, { headers: { authorization: `Bearer ${SECRET}` } });
      request.on('response', (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => resolve(bytes));
      });
      request.on('error', reject);
      request.end();
    });
  }

  after(async () => {
    await gateway?.stop();
    await petService?.stop();
    await upstream?.close();
  });

  it('streams a 200 MB upload to the upstream in constant gateway memory', async () => {
    upstream.handle((request, response, received) => {
      request.on('end', () => response.end(String(received.bytes)));
      request.resume();
    });
    const pid = gateway.child.pid!;
    expect(await upload(WARM_UP)).to.equal(`200 ${WARM_UP}`);
    resetPeak(pid);
    const before = peakRssMb(pid);
    expect(await upload(TOTAL)).to.equal(`200 ${TOTAL}`);
    const growth = peakRssMb(pid) - before;
    console.log(`      gateway peak RSS growth during a 200 MB upload: ${growth.toFixed(1)} MB`);
    expect(growth).to.be.below(MAX_GROWTH_MB);
  });

  it('streams a 200 MB download from the upstream in constant gateway memory', async () => {
    upstream.handle((request, response) => {
      const size = Number(new URL(request.url!, 'http://x').searchParams.get('bytes'));
      response.writeHead(200, { 'content-length': String(size) });
      let sent = 0;
      const more = (): void => {
        while (sent < size) {
          sent += CHUNK.length;
          if (!response.write(CHUNK)) {
            response.once('drain', more);
            return;
          }
        }
        response.end();
      };
      more();
    });
    const pid = gateway.child.pid!;
    expect(await download(WARM_UP)).to.equal(WARM_UP);
    resetPeak(pid);
    const before = peakRssMb(pid);
    expect(await download(TOTAL)).to.equal(TOTAL);
    const growth = peakRssMb(pid) - before;
    console.log(`      gateway peak RSS growth during a 200 MB download: ${growth.toFixed(1)} MB`);
    expect(growth).to.be.below(MAX_GROWTH_MB);
  });

  it('stays ready with an upstream down, reports it in /readyz, and answers its routes with 502', async () => {
    const readiness = await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`);
    const body = (await readiness.json()) as { status: string; checks: Record<string, string> };
    expect(readiness.status, JSON.stringify(body)).to.equal(200);
    expect(body.status).to.equal('ready');
    expect(body.checks).to.include({ petService: 'ok', 'upstream /v1/store/files': 'ok' });
    expect(body.checks['upstream /v1/store/down']).to.match(/ECONNREFUSED/);
    const reply = await fetch(`http://127.0.0.1:${gateway.port}/v1/store/down`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(reply.status).to.equal(502);
    expect(await reply.json()).to.include({ code: 'bad_gateway' });
  });
});
