import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { expect } from 'chai';
import { valuesByLabel } from '../../system-test/support/metrics-exposition';
import { fetchWithinContract } from '../../system-test/support/openapi-validator';
import { waitFor } from '../../system-test/support/wait-for';
import { bash, clusterOrPending, figure, kubectl, kubectlJson, type PodInfo, pods, ROOT } from './support/kube';
import { bearer, deployed, type Deployed } from './support/deployment';
import { probePod } from './support/probe-pod';
import { SteadyLoad } from './support/steady-load';

/* eslint-disable @typescript-eslint/no-explicit-any -- objects as the API returns them, and scripts' JSON answers */

const namespace = 'petstore';
/** The name the gateways dial (PET_SERVICE_ADDR), which the pet service's certificate holds. */
const AUTHORITY = `pet-service.${namespace}.svc.cluster.local`;
/** An internal caller, with a certificate from the CA as docs/security.md issues one. */
const CALLER = 'billing';
/** The kubelet rewrites a Secret volume at its next pod sync (every 60 to 90 s); the pet service reads its files every 5 s. */
const ROTATED_WITHIN_SECONDS = 150;

/** Health.Check from the client pod to `ip`: in plaintext, over TLS without a certificate, with the mounted one. */
const GRPC_CALLS = `
const grpc = require('@grpc/grpc-js');
const fs = require('node:fs');
const Health = grpc.makeGenericClientConstructor(require('grpc-health-check').service, 'Health');
const [target, authority] = process.argv.slice(1);
const file = (name) => fs.readFileSync('/etc/petstore/tls/' + name);
const check = (channel) => new Promise((resolve) => {
  const client = new Health(target, channel, { 'grpc.ssl_target_name_override': authority, 'grpc.default_authority': authority });
  client.check({ service: '' }, { deadline: Date.now() + 5000 }, (error, response) => { client.close(); resolve(error ? grpc.status[error.code] : response.status); });
});
(async () => console.log(JSON.stringify({
  plaintext: await check(grpc.credentials.createInsecure()),
  withoutCertificate: await check(grpc.credentials.createSsl(file('ca.crt'))),
  withCertificate: await check(grpc.credentials.createSsl(file('ca.crt'), file('tls.key'), file('tls.crt'))),
})))();`;

/**
 * Redis and a Sentinel asked from a gateway pod (which the policies admit): without credentials
 * (an inline command on a bare connection, its first reply line), and with the gateway's (Secret
 * gateway-redis) through ioredis, as the gateway logs in.
 */
const REDIS_CALLS = `
const Redis = require('ioredis');
const fs = require('node:fs');
const net = require('node:net');
const secret = (name) => fs.readFileSync('/etc/petstore/redis/' + name, 'utf8').trim();
const [sentinel] = process.argv.slice(1);
const bare = (host, port, command) => new Promise((resolve) => {
  let reply = '';
  const socket = net.connect(port, host, () => socket.write(command + '\\r\\n'));
  socket.on('data', (chunk) => { reply += chunk; if (reply.includes('\\r\\n')) { socket.destroy(); resolve(reply.split('\\r\\n')[0]); } });
  socket.on('error', (error) => resolve('error: ' + error.message));
});
const ask = async (options, ...command) => {
  const client = new Redis({ lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null, ...options });
  client.on('error', () => {});
  try { await client.connect(); return String(await client.call(...command)); } catch (error) { return 'refused: ' + error.message; } finally { client.disconnect(); }
};
(async () => {
  const where = 'SENTINEL get-master-addr-by-name petstore-limits';
  const sentinelWithPassword = await ask({ host: sentinel, port: 26379, password: secret('sentinel-password') }, ...where.split(' '));
  const master = sentinelWithPassword.split(',')[0];
  const gateway = { host: master, port: 6379, username: 'gateway', password: secret('password') };
  console.log(JSON.stringify({
    sentinelWithoutPassword: await bare(sentinel, 26379, where),
    sentinelWithPassword,
    redisWithoutCredentials: await bare(master, 6379, 'PING'),
    gatewayPing: await ask(gateway, 'PING'),
    gatewayFlushall: await ask(gateway, 'FLUSHALL'),
  }));
})();`;

/** Every MongoDB member asked from a pet service pod (which the policy admits), without credentials; and the first with the pet service's URI. */
const MONGODB_CALLS = `
const { MongoClient } = require('mongodb');
const uri = require('node:fs').readFileSync('/etc/petstore/mongodb/uri', 'utf8').trim();
const [namespace] = process.argv.slice(1);
const count = async (url) => {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 20000 });
  try { return await client.db('petstore').collection('pets').countDocuments({}); } catch (error) { return 'refused: ' + error.message; } finally { await client.close(); }
};
(async () => {
  const members = [0, 1, 2].map((i) => 'mongodb-' + i + '.mongodb.' + namespace + '.svc.cluster.local:27017');
  const withoutCredentials = {};
  for (const member of members) withoutCredentials[member] = await count('mongodb://' + member + '/?directConnection=true');
  console.log(JSON.stringify({ withoutCredentials, withTheServiceUri: await count(uri) }));
})();`;

async function nodeIn(pod: string, script: string, ...args: string[]): Promise<any> {
  return JSON.parse(await kubectl(['-n', namespace, 'exec', pod, '--', 'node', '-e', script, ...args]));
}

/** The pet service's handshake refusals by reason, from its admin port (as Prometheus scrapes it). */
async function refusals(pod: PodInfo): Promise<Record<string, number>> {
  return valuesByLabel(await (await fetch(`http://${pod.ip}:9091/metrics`)).text(), 'grpc_server_tls_handshake_refusals_total', 'reason');
}

/** The certificate a pet service pod presents to a new connection (from the node, with the caller's certificate). */
function presented(ip: string, tls: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: ip,
      port: 50051,
      servername: AUTHORITY,
      ALPNProtocols: ['h2'],
      ca: readFileSync(join(tls, 'ca.crt')),
      cert: readFileSync(join(tls, `${CALLER}.crt`)),
      key: readFileSync(join(tls, `${CALLER}.key`)),
    });
    socket.once('secureConnect', () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.once('error', reject);
  });
}

const fingerprint = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

describe('deploy/e2e: production, every internal hop authenticated (issue 35)', function () {
  this.timeout(600_000);
  let deployment: Deployed;
  let petServices: PodInfo[];

  before(async function () {
    clusterOrPending(this);
    deployment = (await deployed()).production;
    petServices = await pods(namespace, 'app.kubernetes.io/name=pet-service');
    // Another internal caller's certificate, by the documented step (docs/security.md), as its Secret.
    await bash(`deploy/scripts/throwaway-ca.sh ${namespace} "${deployment.secretsDir}" ${CALLER}\nkubectl apply -f "${deployment.secretsDir}/${CALLER}-pet-service-tls.yaml"`);
    // An internal client: the NetworkPolicy admits it (the label), it mounts its own certificate,
    // and calls without it are tried from it too. The pet service's image, for Node and grpc-js.
    const client = probePod('tls-client', namespace, { 'petstore.example.com/pet-service-client': 'true' }, {
      image: 'localhost/petstore/pet-service:e2e',
      secret: { name: `${CALLER}-pet-service-tls`, mountPath: '/etc/petstore/tls' },
    });
    await kubectl(['apply', '-f', '-'], { input: JSON.stringify(client) });
    await kubectl(['-n', namespace, 'wait', '--for=condition=Ready', 'pod/tls-client', '--timeout=120s']);
  });

  after(async () => {
    await kubectl(['-n', namespace, 'delete', 'pod', 'tls-client', '--wait=false']);
  });

  it("the pet service is ready through its admin /readyz (the kubelet's gRPC probe speaks no TLS)", async () => {
    const set = await kubectlJson(['-n', namespace, 'get', 'deployment', 'pet-service']);
    expect(set.spec.template.spec.containers[0].readinessProbe.httpGet).to.include({ path: '/readyz', port: 'admin' });
    for (const pod of petServices) {
      expect(pod.ready, pod.name).to.equal(true);
      expect((await fetch(`http://${pod.ip}:9091/readyz`)).status, pod.name).to.equal(200);
    }
  });

  it('a pod the NetworkPolicy admits cannot call the pet service without a client certificate (refused, logged per reason, counted); with one from the CA it can, and so can the gateway', async () => {
    const target = petServices[0]!;
    const client = (await pods(namespace, 'petstore.example.com/pet-service-client=true')).find((pod) => pod.name === 'tls-client')!;
    const since = new Date();
    const before = await refusals(target);
    const answers = await nodeIn('tls-client', GRPC_CALLS, `${target.ip}:50051`, AUTHORITY);
    expect(answers).to.deep.equal({ plaintext: 'UNAVAILABLE', withoutCertificate: 'UNAVAILABLE', withCertificate: 'SERVING' });
    const after = await refusals(target);
    expect((after.protocol_mismatch ?? 0) - (before.protocol_mismatch ?? 0), JSON.stringify(after)).to.be.at.least(1);
    expect((after.no_client_certificate ?? 0) - (before.no_client_certificate ?? 0), JSON.stringify(after)).to.be.at.least(1);
    // The line is written within the logger's flush interval and then copied by the runtime: wait for it, bounded.
    let logged: Array<{ peer: string; reason: string }> = [];
    await waitFor(
      async () => {
        logged = (await kubectl(['-n', namespace, 'logs', target.name, `--since-time=${since.toISOString()}`]))
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line))
          .filter((line) => line.msg === 'TLS handshake refused');
        const reasons = logged.filter((line) => line.peer === client.ip).map((line) => line.reason);
        return reasons.includes('protocol_mismatch') && reasons.includes('no_client_certificate');
      },
      15_000,
      () => `refusals logged by ${target.name} since ${since.toISOString()}: ${JSON.stringify(logged)}; the client is ${client.ip}`,
    );
    const through = await fetchWithinContract(`${deployment.gatewayUrl}/v1/pets?limit=1`, { headers: bearer('contract') });
    expect(through.status, 'the gateway calls the pet service with its certificate').to.equal(200);
  });

  it("Redis refuses a client without credentials and the gateway's user FLUSHALL; a Sentinel refuses a client without its password", async () => {
    const gateway = (await pods(namespace, 'app.kubernetes.io/name=gateway'))[0]!;
    const answers = await nodeIn(gateway.name, REDIS_CALLS, `redis-0.redis.${namespace}.svc.cluster.local`);
    expect(answers.sentinelWithoutPassword).to.match(/^-NOAUTH /);
    expect(answers.sentinelWithPassword).to.match(new RegExp(`^redis-[0-2]\\.redis\\.${namespace}\\.svc\\.cluster\\.local,6379$`));
    expect(answers.redisWithoutCredentials).to.match(/^-NOAUTH /);
    expect(answers.gatewayPing).to.equal('PONG');
    expect(answers.gatewayFlushall).to.match(/^refused: NOPERM /);
  });

  it('MongoDB (FerretDB with authentication) refuses a client without credentials on every member; the pet service’s URI is let in', async () => {
    const answers = await nodeIn(petServices[0]!.name, MONGODB_CALLS, namespace);
    expect(Object.keys(answers.withoutCredentials)).to.have.length(3);
    for (const [member, answer] of Object.entries(answers.withoutCredentials)) expect(answer, member).to.match(/^refused: .*requires authentication/);
    expect(answers.withTheServiceUri).to.be.a('number');
  });

  it(`a rotated pet-service-tls Secret is presented to new connections within ${ROTATED_WITHIN_SECONDS} s, with no restart and no request lost`, async () => {
    const tls = join(deployment.secretsDir, 'tls');
    const old = fingerprint(join(tls, 'pet-service.crt'));
    for (const pod of petServices) expect(await presented(pod.ip, tls), pod.name).to.equal(old);
    const load = new SteadyLoad(deployment.gatewayUrl, bearer('load'), 4);
    const watched = await pods(namespace, 'app.kubernetes.io/name in (gateway,pet-service)');
    // As docs/security.md rotates the throwaway CA's certificates: run the script again (same CA), apply.
    await bash(`deploy/scripts/throwaway-ca.sh ${namespace} "${deployment.secretsDir}"\nkubectl apply -f "${deployment.secretsDir}/pet-service-tls.yaml" -f "${deployment.secretsDir}/gateway-pet-service-tls.yaml"`, { cwd: ROOT });
    const applied = performance.now();
    const rotated = fingerprint(join(tls, 'pet-service.crt'));
    expect(rotated).to.not.equal(old);
    const delays = new Map<string, number>();
    while (delays.size < petServices.length && performance.now() - applied < ROTATED_WITHIN_SECONDS * 1000) {
      for (const pod of petServices.filter((p) => !delays.has(p.name))) {
        if ((await presented(pod.ip, tls)) === rotated) delays.set(pod.name, (performance.now() - applied) / 1000);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const summary = await load.stop();
    for (const [pod, seconds] of delays) figure(`production: ${pod} presented the rotated certificate after`, `${seconds.toFixed(1)} s`);
    figure('production: requests during the certificate rotation', `${summary.sent} sent, ${summary.failed} failed, statuses ${JSON.stringify(summary.byStatus)}`);
    expect([...delays.keys()].sort()).to.deep.equal(petServices.map((pod) => pod.name).sort());
    expect(summary.problems).to.deep.equal([]);
    expect(Object.keys(summary.byStatus).filter((status) => !['200', '201'].includes(status))).to.deep.equal([]);
    const now = await pods(namespace, 'app.kubernetes.io/name in (gateway,pet-service)');
    expect(now.map((pod) => [pod.name, pod.uid, pod.restarts]).sort()).to.deep.equal(watched.map((pod) => [pod.name, pod.uid, pod.restarts]).sort());
  });
});
