import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { createMetrics, type GatewayMetrics } from '../gateway/src/observability/metrics';
import { startTestStack, TEST_KEYS, type TestStack } from './support/test-stack';

/**
 * Issue 27, finding 8: a request the front door refuses before any route (401, 429, 400 for two
 * Authorization fields) is logged and counted under the route of its path, as the requests it
 * admits are, not as `unmatched`.
 */
describe('refusals at the front door are reported under their route', () => {
  let stack: TestStack;
  let metrics: GatewayMetrics;
  const lines: Array<Record<string, unknown>> = [];

  before(async () => {
    metrics = createMetrics();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    stack = await startTestStack({ logger: pino(sink), metrics });
    stack.setNow(Date.UTC(2030, 0, 1, 12, 0, 30));
  });

  after(async () => {
    await stack.close();
  });

  /** The status and route of the log line of the request that got `requestId`. */
  function logged(requestId: string): { status: unknown; route: unknown } {
    const line = lines.find((entry) => entry.requestId === requestId);
    return { status: line?.status, route: line?.route };
  }

  async function get(path: string, headers: Record<string, string>): Promise<{ status: number; requestId: string }> {
    const response = await fetch(`${stack.baseUrl}${path}`, { headers });
    await response.arrayBuffer();
    return { status: response.status, requestId: response.headers.get('x-request-id')! };
  }

  it('401 without a key or with a malformed one', async () => {
    for (const [path, route] of [['/v1/pets', '/v1/pets'], ['/v1/pets/7', '/v1/pets/:petId'], ['/v1/nothing-here', 'unmatched']]) {
      const { status, requestId } = await get(path!, {});
      expect(status).to.equal(401);
      expect(logged(requestId)).to.deep.equal({ status: 401, route });
    }
    const { status, requestId } = await get('/v1/pets', { authorization: `Bearer ${TEST_KEYS.free}, Bearer ${TEST_KEYS.free}` });
    expect(logged(requestId)).to.deep.equal({ status, route: '/v1/pets' });
  });

  it('429 over the limit, counted under the route too', async () => {
    let last = { status: 0, requestId: '' };
    for (let sent = 0; sent < 200 && last.status !== 429; sent += 1) last = await get('/v1/pets', {});
    expect(last.status).to.equal(429);
    expect(logged(last.requestId)).to.deep.equal({ status: 429, route: '/v1/pets' });
    expect(await metrics.registry.metrics()).to.match(/^http_requests_total\{[^}]*route="\/v1\/pets"[^}]*status="429"[^}]*\} \d+$/m);
  });
});
