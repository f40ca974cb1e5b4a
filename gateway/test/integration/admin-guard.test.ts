import { expect } from 'chai';
import pino from 'pino';
import { createAdminApp } from '../../src/admin/admin-app';
import { listen, type ListeningServer } from '../../src/http/http-server';
import { MemoryRateLimiter } from '../../src/rate-limit/memory-rate-limiter';
import { keyPolicy, keySubject } from '../../src/rate-limit/rate-limit-policy';

const TOKEN = 'admin-token-0123456789';

/**
 * The admin port's state-changing routes need ADMIN_TOKEN (compared in constant time); probes and
 * metrics stay open for kubelet and Prometheus. Before, anyone who reached the port could lift a
 * ban, and learn from 204 or 404 whether a key was banned.
 */
describe('admin port guard', () => {
  let admin: ListeningServer;
  let limiter: MemoryRateLimiter;

  beforeEach(async () => {
    limiter = new MemoryRateLimiter({ now: () => 0 });
    const policy = keyPolicy({ perMinute: 1, perDay: 100 }, { threshold: 0, seconds: 900 });
    for (let index = 0; index < 3; index += 1) await limiter.consume(keySubject('banned'), policy);
    admin = await listen(
      createAdminApp({
        registry: { contentType: 'text/plain', metrics: async () => 'up 1\n' },
        readinessChecks: {},
        draining: () => false,
        limiter,
        usage: { keys: () => [{ id: 'banned', plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } }], ban: { threshold: 0, seconds: 900 }, scope: 'replica', now: () => 0 },
        adminToken: TOKEN,
        logger: pino({ level: 'silent' }),
      }),
      '127.0.0.1',
      0,
    );
  });
  afterEach(async () => {
    admin.server.closeAllConnections();
    await new Promise((resolve) => admin.server.close(resolve));
  });

  const lift = (authorization?: string) =>
    fetch(`http://127.0.0.1:${admin.port}/admin/bans/banned`, {
      method: 'DELETE',
      headers: authorization === undefined ? {} : { Authorization: authorization },
    });

  it('refuses a ban lift without the token, or with a wrong one, with 401 and without saying whether a ban exists', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Bearer ${TOKEN}x`, TOKEN]) {
      const response = await lift(authorization);
      expect(response.status, String(authorization)).to.equal(401);
      expect(await response.json()).to.deep.equal({ code: 'unauthorized', message: 'admin token required', status: 401 });
      expect(response.headers.get('www-authenticate')).to.equal('Bearer realm="petstore-admin"');
    }
    expect((await fetch(`http://127.0.0.1:${admin.port}/admin/bans/unknown`, { method: 'DELETE' })).status).to.equal(401);
  });

  it('lifts the ban with the token', async () => {
    expect((await lift(`Bearer ${TOKEN}`)).status).to.equal(204);
    expect((await lift(`bearer ${TOKEN}`)).status).to.equal(404);
  });

  it('keeps /healthz, /readyz and /metrics open', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await fetch(`http://127.0.0.1:${admin.port}${path}`)).status, path).to.equal(200);
    }
  });

  it('answers usage with the token only, without saying which keys exist', async () => {
    for (const path of ['/admin/usage', '/admin/usage/banned', '/admin/usage/unknown']) {
      for (const authorization of [undefined, 'Bearer wrong-token-0123456789', TOKEN]) {
        const response = await fetch(`http://127.0.0.1:${admin.port}${path}`, { headers: authorization === undefined ? {} : { Authorization: authorization } });
        expect(response.status, `${path} ${String(authorization)}`).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.equal('Bearer realm="petstore-admin"');
      }
    }
    const authorized = { headers: { Authorization: `Bearer ${TOKEN}` } };
    const one = await fetch(`http://127.0.0.1:${admin.port}/admin/usage/banned`, authorized);
    expect(one.status).to.equal(200);
    expect(await one.json()).to.include({ scope: 'replica', id: 'banned', banned: true, bannedUntil: '1970-01-01T00:15:00.000Z' });
    expect((await fetch(`http://127.0.0.1:${admin.port}/admin/usage`, authorized)).status).to.equal(200);
    expect((await fetch(`http://127.0.0.1:${admin.port}/admin/usage/unknown`, authorized)).status).to.equal(404);
  });
});

describe('admin port without ADMIN_TOKEN', () => {
  it('answers usage to loopback clients', async () => {
    const admin = await listen(
      createAdminApp({
        registry: { contentType: 'text/plain', metrics: async () => '' },
        readinessChecks: {},
        draining: () => false,
        limiter: new MemoryRateLimiter({ now: () => 0 }),
        usage: { keys: () => [], ban: { threshold: 1, seconds: 900 }, scope: 'replica', now: () => 0 },
        logger: pino({ level: 'silent' }),
      }),
      '127.0.0.1',
      0,
    );
    try {
      const response = await fetch(`http://127.0.0.1:${admin.port}/admin/usage`);
      expect(response.status).to.equal(200);
      expect(await response.json()).to.deep.equal({ scope: 'replica', at: '1970-01-01T00:00:00.000Z', keys: [] });
    } finally {
      admin.server.closeAllConnections();
      await new Promise((resolve) => admin.server.close(resolve));
    }
  });
});
