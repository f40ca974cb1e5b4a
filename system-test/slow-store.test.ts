import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { sha256Hex } from '../gateway/src/keys/api-keys';
import { type MongoServer, startMongoOrSkip } from './support/mongo-server';
import { type ServiceProcess, startService } from './support/service-process';

const WRITERS = 20;
const READERS = 5;
const LOAD_MS = 20_000;
const KEY = 'slow-store-secret';

interface Tally {
  requests: number;
  ok: number;
  shed: number;
  failures: string[];
}

/**
 * Issue 13, point 4: on FerretDB, concurrent creates outran the store and the store then failed
 * reads too. Here writers outnumber what FerretDB absorbs for 20 s, with readers alongside,
 * through a gateway and a pet service started as in production (defaults but for the write bounds
 * FerretDB's SQLite handler needs, see docs/mongodb.md). Writers honour `Retry-After`, as clients
 * must.
 */
describe('a slow store under write overload (real FerretDB, gateway and pet service processes)', function () {
  this.timeout(90_000);
  let server: MongoServer;
  let keysDir: string;
  let petService: ServiceProcess | undefined;
  let gateway: ServiceProcess | undefined;

  before(async function () {
    server = await startMongoOrSkip(this);
    keysDir = mkdtempSync(join(tmpdir(), 'slow-store-'));
    const keysFile = join(keysDir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ id: 'load', sha256: sha256Hex(KEY), plan: 'enterprise', limits: { perMinute: 1e9, perDay: 1e9 } }] }));
    petService = await startService('pet-service', {
      PET_SERVICE_HOST: '127.0.0.1',
      MONGODB_URI: server.uri,
      MONGODB_DB: server.freshDatabase(),
      // FerretDB's SQLite handler writes one at a time; concurrent writes only wait on its lock.
      STORE_MAX_CONCURRENT_WRITES: '1',
      STORE_MAX_QUEUED_WRITES: '8',
    });
    gateway = await startService('gateway', { HOST: '127.0.0.1', API_KEYS_FILE: keysFile, PET_SERVICE_ADDR: `127.0.0.1:${petService.port}` });
  });

  after(async () => {
    await Promise.all([gateway?.stop(), petService?.stop()]);
    await server?.close();
    if (keysDir !== undefined) rmSync(keysDir, { recursive: true, force: true });
  });

  it('never fails a read because writes are slow, and answers every write 201 or 429 with Retry-After', async () => {
    const base = `http://127.0.0.1:${gateway!.port}/v1/pets`;
    const headers = { authorization: `Bearer ${KEY}` };
    const reads: Tally = { requests: 0, ok: 0, shed: 0, failures: [] };
    const writes: Tally = { requests: 0, ok: 0, shed: 0, failures: [] };
    const end = Date.now() + LOAD_MS;

    const writer = async (index: number): Promise<void> => {
      for (let n = 0; Date.now() < end; n += 1) {
        writes.requests += 1;
        const response = await fetch(base, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `w${index}-${n}`, categoryId: 1 }),
        });
        const body = await response.text();
        const retryAfter = Number(response.headers.get('retry-after'));
        if (response.status === 201) writes.ok += 1;
        else if (response.status === 429 && Number.isInteger(retryAfter) && retryAfter >= 1) {
          writes.shed += 1;
          await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
        } else writes.failures.push(`POST ${response.status} retry-after=${response.headers.get('retry-after')} ${body}`);
      }
    };
    const reader = async (): Promise<void> => {
      while (Date.now() < end) {
        reads.requests += 1;
        const response = await fetch(`${base}?limit=20`, { headers });
        const body = await response.text();
        if (response.status === 200) reads.ok += 1;
        else reads.failures.push(`GET ${response.status} ${body}`);
      }
    };
    // The autoscaling signal (docs/deploy.md): the creates' queue, as the pet service's /metrics shows it.
    const queued: number[] = [];
    const scraper = async (): Promise<void> => {
      while (Date.now() < end) {
        const text = await (await fetch(`http://127.0.0.1:${petService!.adminPort}/metrics`)).text();
        queued.push(Number(/^pet_store_writes_queued (\d+)$/m.exec(text)?.[1]));
      }
    };
    await Promise.all([...Array.from({ length: WRITERS }, (_, index) => writer(index)), ...Array.from({ length: READERS }, reader), scraper()]);

    const line = (name: string, tally: Tally, okStatus: number) =>
      `      ${name}: ${tally.requests} requests, ${tally.ok} × ${okStatus}, ${tally.shed} × 429, ${tally.failures.length} failed`;
    console.log(line('writes', writes, 201));
    console.log(line('reads', reads, 200));
    const distinct = (failures: string[]) => [...new Set(failures)].slice(0, 5);
    expect(distinct(reads.failures), 'failed reads').to.deep.equal([]);
    expect(distinct(writes.failures), 'failed writes').to.deep.equal([]);
    // The load must have overrun the bound (some 429s) and still let writes through.
    expect(writes.shed, 'writes shed with 429').to.be.above(0);
    expect(writes.ok, 'writes made').to.be.above(0);
    expect(reads.ok, 'reads served').to.be.above(0);
    expect(queued.length, 'scrapes').to.be.above(0);
    expect(queued.every((depth) => Number.isInteger(depth) && depth >= 0 && depth <= 8), queued.join(' ')).to.equal(true);
    expect(Math.max(...queued), 'the queue seen filling').to.be.above(0);
  });
});
