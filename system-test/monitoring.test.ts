import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { ruleGroups } from '../scripts/generate-monitoring';
import { dashboardExpressions, recordedNames, rules, selectorsOf, type Selector } from './support/monitoring-files';
import { valuesByLabel } from './support/metrics-exposition';
import { type ProcessStack, startProcessStack } from './support/process-stack';
import { type PrometheusServer, type Series, startPrometheusOrSkip } from './support/prometheus';
import { type RedisServer, startRedisOrSkip } from './support/redis-server';
import { certificateDirectory, type CertificateDirectory, createTestCa, notAfterSeconds, type TestCa } from './support/test-certificates';
import { waitFor } from './support/wait-for';

const MONITORING = join(__dirname, '..', 'deploy', 'monitoring');
const RULE_FILES = join(MONITORING, 'rules', '*.yaml');
const NAMESPACE = 'monitoring-test';
const KEYS = { free: 'demo-free-key-0000', enterprise: 'demo-enterprise-key-0000' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** Series Prometheus makes itself, which no service exports. */
const PROMETHEUS_OWN = new Set(['up', 'ALERTS']);
/** Labels Prometheus gives every series of a target. */
const TARGET_LABELS = new Set(['job', 'instance', 'namespace']);
/**
 * Label values only a failure makes, which this suite does not cause: a refused create (the write
 * queue full) and a failed store ping (the store down). Their labels are still checked.
 */
const FAILURE_ONLY = new Set(['code="RESOURCE_EXHAUSTED"', 'outcome="error"']);

type Exposition = Map<string, Array<Record<string, string>>>;

/** A service's `/metrics`: each sample's labels, by sample name (`_bucket`, `_count` and `_sum` apart). */
async function exposition(adminPort: number): Promise<Exposition> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const samples: Exposition = new Map();
  for (const line of text.split('\n')) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (sample === null) continue;
    const labels = Object.fromEntries([...(sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, name, value]) => [name!, value!]));
    samples.set(sample[1]!, [...(samples.get(sample[1]!) ?? []), labels]);
  }
  return samples;
}

/** What is wrong with `selector` against the services' expositions, by job; empty when nothing is. */
function selectorProblems(selector: Selector, byJob: Readonly<Record<string, Exposition>>, recorded: ReadonlySet<string>): string[] {
  const { name, matchers } = selector;
  if (name.includes(':')) return recorded.has(name) ? [] : [`${name}: no recording rule writes it`];
  if (PROMETHEUS_OWN.has(name)) return [];
  const job = matchers.find((matcher) => matcher.label === 'job');
  if (job === undefined || (job.op !== '=' && job.op !== '=~')) return [`${name}: selects no job`];
  return job.value.split('|').flatMap((jobName) => {
    const samples = byJob[jobName]?.get(name);
    if (samples === undefined) return [`${name}: not in the /metrics of ${jobName}`];
    return matchers.flatMap((matcher) => {
      if (TARGET_LABELS.has(matcher.label)) return [];
      if (!samples.some((labels) => matcher.label in labels)) return [`${name}: no label ${matcher.label} in the /metrics of ${jobName}`];
      const wanted = `${matcher.label}="${matcher.value}"`;
      if (matcher.op !== '=' || FAILURE_ONLY.has(wanted) || samples.some((labels) => labels[matcher.label] === matcher.value)) return [];
      return [`${name}{${wanted}}: not in the /metrics of ${jobName}`];
    });
  });
}

/**
 * The scrape configuration of deploy/monitoring/prometheus.yml, its relabelling as it is, with the
 * two services as static targets that carry what Kubernetes pod discovery would give their pods:
 * the pod's IP and container port (here another port, which the annotation's must replace), its
 * annotations, its name label, its namespace and name.
 */
function exampleScrapeConfig({ gateway, petService }: ProcessStack): object {
  const [example] = (parse(readFileSync(join(MONITORING, 'prometheus.yml'), 'utf8')) as { scrape_configs: Array<Record<string, unknown>> }).scrape_configs;
  const { kubernetes_sd_configs: discovery, ...scrapeConfig } = example!;
  expect(discovery, 'the example discovers pods').to.deep.equal([{ role: 'pod', namespaces: { names: ['petstore', 'petstore-staging'] } }]);
  const pod = (name: string, adminPort: number) => ({
    targets: ['127.0.0.1:1'],
    labels: {
      __meta_kubernetes_pod_annotation_prometheus_io_scrape: 'true',
      __meta_kubernetes_pod_annotation_prometheus_io_port: String(adminPort),
      __meta_kubernetes_pod_annotation_prometheus_io_path: '/metrics',
      __meta_kubernetes_pod_label_app_kubernetes_io_name: name,
      __meta_kubernetes_namespace: NAMESPACE,
      __meta_kubernetes_pod_name: `${name}-0`,
    },
  });
  return { ...scrapeConfig, static_configs: [pod('gateway', gateway.adminPort), pod('pet-service', petService.adminPort)] };
}

/** One request of each kind the rules and the dashboard read about, answered as expected. */
async function exerciseEveryFeature(baseUrl: string): Promise<void> {
  const send = async (path: string, init: RequestInit, expected: number): Promise<Response> => {
    const response = await fetch(`${baseUrl}${path}`, init);
    expect(response.status, `${init.method ?? 'GET'} ${path}`).to.equal(expected);
    return response;
  };
  const json = { ...auth(KEYS.enterprise), 'content-type': 'application/json' };
  const created = (await (await send('/v1/pets', { method: 'POST', headers: json, body: '{"name":"Rex","categoryId":1}' }, 201)).json()) as { id: number };
  await send(`/v1/pets/${created.id}`, { headers: auth(KEYS.enterprise) }, 200);
  await send('/v1/pets/999999', { headers: auth(KEYS.enterprise) }, 404);
  await send('/v1/pets?limit=5', { headers: auth(KEYS.enterprise) }, 200);
  await send('/v1/pets', { method: 'POST', headers: json, body: '{"name":""}' }, 400);
  await send('/v1/pets', {}, 401);
  // Past the free plan's 60 a minute (twice that, should a new minute begin meanwhile).
  let status = 0;
  for (let sent = 0; sent < 121 && status !== 429; sent += 1) status = (await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: auth(KEYS.free) })).status;
  expect(status, 'limited').to.equal(429);
}

/**
 * Steady mixed traffic on the enterprise key until stopped: creates, reads of one pet and of a
 * page, and a miss. Paced to stay well inside the key's limit (5,000 a minute) on a busy machine.
 */
class SteadyTraffic {
  readonly statuses: number[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(baseUrl: string) {
    this.loop = this.run(baseUrl);
  }

  private async run(baseUrl: string): Promise<void> {
    const headers = auth(KEYS.enterprise);
    let id = 1;
    while (this.running) {
      const requests: Array<[string, RequestInit]> = [
        ['/v1/pets', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' }],
        [`/v1/pets/${id}`, { headers }],
        ['/v1/pets?limit=10', { headers }],
        ['/v1/pets/999999', { headers }],
      ];
      for (const [path, init] of requests) {
        try {
          const response = await fetch(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
          const body = (await response.json()) as { id?: number };
          if (response.status === 201 && typeof body.id === 'number') id = body.id;
          this.statuses.push(response.status);
        } catch {
          this.statuses.push(0);
        }
      }
      // Pacing the load, not waiting for a state.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

describe('monitoring: the rules and the dashboard against a running gateway and pet service', function () {
  this.timeout(120_000);
  let redis: RedisServer;
  let stack: ProcessStack;

  let files: CertificateDirectory;
  let ca: TestCa;
  const expiries = { ca: 0, petService: 0, gateway: 0 };

  before(async function () {
    redis = await startRedisOrSkip(this);
    // The gRPC hop over mutual TLS, as the overlays run it, so that the certificates' expiry is exported.
    files = certificateDirectory();
    // Further from their ends than TlsCertificateExpiring's 7 days, as renewed certificates are.
    ca = createTestCa('petstore test CA', 90);
    const server = ca.issue('pet-service', { validDays: 30 });
    const gateway = ca.issue('gateway', { use: 'client', validDays: 29 });
    for (const [name, pem] of Object.entries({ 'ca.crt': ca.cert, 'tls.crt': server.cert, 'tls.key': server.key, 'gateway.crt': gateway.cert, 'gateway.key': gateway.key })) files.write(name, pem);
    Object.assign(expiries, { ca: notAfterSeconds(ca.cert), petService: notAfterSeconds(server.cert), gateway: notAfterSeconds(gateway.cert) });
    stack = await startProcessStack({
      petService: { GRPC_TLS_CERT_FILE: `${files.path}/tls.crt`, GRPC_TLS_KEY_FILE: `${files.path}/tls.key`, GRPC_TLS_CLIENT_CA_FILE: `${files.path}/ca.crt` },
      gateway: {
        REDIS_URL: redis.url,
        PET_SERVICE_TLS_CA_FILE: `${files.path}/ca.crt`,
        PET_SERVICE_TLS_CERT_FILE: `${files.path}/gateway.crt`,
        PET_SERVICE_TLS_KEY_FILE: `${files.path}/gateway.key`,
      },
      petServiceAddress: (port) => `localhost:${port}`,
    });
  });
  after(async () => {
    await stack?.stop();
    await redis?.stop();
    files?.remove();
  });

  it("exports when each side's certificates expire, which TlsCertificateExpiring reads", async () => {
    const read = async (adminPort: number): Promise<Record<string, number>> =>
      valuesByLabel(await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text(), 'tls_certificate_expiration_timestamp_seconds', 'certificate');
    expect(await read(stack.petService.adminPort), 'pet service').to.deep.equal({ own: expiries.petService, ca: expiries.ca });
    expect(await read(stack.gateway.adminPort), 'gateway').to.deep.equal({ own: expiries.gateway, ca: expiries.ca });
  });

  it("exports the gateway's connections to the pet service by state, each state named", async () => {
    await waitFor(async () => {
      const counts = valuesByLabel(await (await fetch(`http://127.0.0.1:${stack.gateway.adminPort}/metrics`)).text(), 'grpc_client_connections', 'state');
      return counts.ready !== undefined && counts.ready >= 1 && Object.keys(counts).sort().join() === 'connecting,draining,idle,ready,transient_failure';
    }, 10_000);
  });

  it('reads only metrics, labels and label values the services export, and series the rules record', async () => {
    await exerciseEveryFeature(stack.baseUrl);
    const byJob = { gateway: await exposition(stack.gateway.adminPort), 'pet-service': await exposition(stack.petService.adminPort) };
    const recorded = recordedNames();
    const expressions = [...rules().map((rule) => rule.expr), ...dashboardExpressions()];
    const selectors = expressions.flatMap((expr) => selectorsOf(expr));
    expect(selectors.length, 'selectors read').to.be.greaterThan(100);
    expect(selectors.flatMap((selector) => selectorProblems(selector, byJob, recorded))).to.deep.equal([]);
    expect(selectorProblems({ name: 'http_requests_totl', matchers: [{ label: 'job', op: '=', value: 'gateway' }] }, byJob, recorded), 'a misspelt name').to.deep.equal([
      'http_requests_totl: not in the /metrics of gateway',
    ]);
    expect(selectorProblems({ name: 'http_requests_total', matchers: [{ label: 'job', op: '=', value: 'gateway' }, { label: 'route', op: '=', value: '/v1/pet' }] }, byJob, recorded)).to.deep.equal([
      'http_requests_total{route="/v1/pet"}: not in the /metrics of gateway',
    ]);
  });

  describe('a real Prometheus scraping both, with the rules files as they are', function () {
    let prometheus: PrometheusServer;
    let traffic: SteadyTraffic | undefined;

    before(async function () {
      // Every scrape and rule evaluation each second (the rules files set no interval of their own),
      // so an alert's expression holds, and the alert is pending, within seconds of the fault;
      // its `for` (2 minutes for those awaited in pending) keeps it from firing within the test.
      prometheus = await startPrometheusOrSkip(this, { ruleFiles: [RULE_FILES], scrapeConfigs: [exampleScrapeConfig(stack)] });
    });
    afterEach(async () => {
      await traffic?.stop();
      traffic = undefined;
    });
    after(async () => {
      await prometheus?.stop();
    });

    /** Resolves once every rule group has been evaluated on a scrape of both targets made after now. */
    const evaluatedOnFreshScrapes = async (): Promise<void> => {
      const since = Date.now();
      let scrapedBy = Infinity;
      await waitFor(async () => {
        const scraped = (await prometheus.targets()).map((target) => Date.parse(target.lastScrape));
        if (scraped.length !== 2 || scraped.some((at) => at <= since)) return false;
        scrapedBy = Math.max(...scraped);
        return true;
      }, 20_000);
      await waitFor(async () => (await prometheus.ruleGroups()).every((group) => Date.parse(group.lastEvaluation) > scrapedBy), 20_000);
    };
    const value = async (expr: string): Promise<number | undefined> => {
      const [sample, ...more] = await prometheus.query(expr);
      expect(more, expr).to.deep.equal([]);
      return sample === undefined ? undefined : Number(sample.value[1]);
    };
    const activeAlerts = async (): Promise<string[]> =>
      (await prometheus.alerts()).map(({ labels, state }) => `${labels.alertname}${labels.severity === undefined ? '' : ` ${labels.severity}`} ${state}`);

    it("scrapes both services through the example configuration's relabelling, as the jobs the rules select", async () => {
      await waitFor(async () => {
        const targets = await prometheus.targets();
        return targets.length === 2 && targets.every((target) => target.health === 'up');
      }, 20_000);
      expect((await prometheus.targets()).map(({ labels }) => `${labels.job} ${labels.namespace} ${labels.pod} ${labels.instance}`).sort()).to.deep.equal([
        `gateway ${NAMESPACE} gateway-0 127.0.0.1:${stack.gateway.adminPort}`,
        `pet-service ${NAMESPACE} pet-service-0 127.0.0.1:${stack.petService.adminPort}`,
      ]);
    });

    it('evaluates every rule on live data without error; each SLI reads what the traffic made of it', async () => {
      traffic = new SteadyTraffic(stack.baseUrl);
      await waitFor(async () => (await value(`slo:sli_error:ratio_rate5m{slo="availability",namespace="${NAMESPACE}"}`)) !== undefined, 30_000);
      await traffic.stop();
      traffic = undefined;
      await evaluatedOnFreshScrapes();

      const groups = await prometheus.ruleGroups();
      expect(groups.map((group) => group.name)).to.have.members(ruleGroups().map((group) => group.name));
      expect(groups.flatMap((group) => group.rules.filter((rule) => rule.health !== 'ok').map((rule) => `${group.name}/${rule.name}: ${rule.health} ${rule.lastError ?? ''}`))).to.deep.equal([]);
      // Latency alerts aside: how fast a request is answered here depends on the machine's load,
      // and the latency SLI is checked against the histogram below instead.
      expect((await activeAlerts()).filter((alert) => !alert.startsWith('ApiLatencyBudgetBurn')), 'nothing has failed yet').to.deep.equal([]);

      // Nothing failed and no limit fell back: each of these SLIs is an error ratio of exactly 0
      // at every window, which needs its selectors to match the services' series.
      for (const slo of ['availability', 'pets-durable', 'limits-exact', 'keys-in-force']) {
        for (const window of ['5m', '30m', '1h', '2h', '6h', '1d', '3d']) {
          expect(await value(`slo:sli_error:ratio_rate${window}{slo="${slo}",namespace="${NAMESPACE}"}`), `${slo} over ${window}`).to.equal(0);
        }
      }
      // Latency, per route: the share of the window's requests slower than the route's bound, as
      // the raw histogram samples have it; exactly 0 where no sample ever counted a slow one.
      const bounds = [
        ['GET', '/v1/pets', '0.25'],
        ['GET', '/v1/pets/:petId', '0.1'],
        ['POST', '/v1/pets', '0.5'],
      ] as const;
      for (const [method, route, bound] of bounds) {
        const selector = `job="gateway",namespace="${NAMESPACE}",method="${method}",route="${route}",status!~"5..|429"`;
        const sum = (series: Series[], at: 0 | -1): number => series.reduce((total, { values }) => total + Number(values.at(at)![1]), 0);
        const counts = await prometheus.queryRange(`http_request_duration_seconds_count{${selector}}[5m]`);
        const fast = await prometheus.queryRange(`http_request_duration_seconds_bucket{${selector},le="${bound}"}[5m]`);
        const total = sum(counts, -1) - sum(counts, 0);
        const slow = total - (sum(fast, -1) - sum(fast, 0));
        expect(total, `${method} ${route}: requests seen`).to.be.greaterThan(0);
        const recorded = await value(`slo:sli_error:ratio_rate5m{slo="latency",namespace="${NAMESPACE}",method="${method}",route="${route}"}`);
        expect(recorded, `${method} ${route}: ${slow} of ${total} slower than ${bound} s`).to.be.closeTo(slow / total, 0.01);
        if (sum(counts, -1) === sum(fast, -1)) expect(recorded, `${method} ${route}: never slow`).to.equal(0);
      }
    });

    it('evaluates every query of the dashboard without error', async () => {
      for (const expr of dashboardExpressions()) {
        const concrete = expr.replaceAll('$namespace', NAMESPACE).replaceAll('$__rate_interval', '1m');
        await prometheus.query(concrete);
      }
    });

    it('puts RateLimitsNotShared in pending when Redis is killed; limits-exact then reads the share of its window in fallback', async () => {
      traffic = new SteadyTraffic(stack.baseUrl);
      process.kill(redis.pid, 'SIGKILL');
      await waitFor(async () => (await activeAlerts()).includes('RateLimitsNotShared ticket pending'), 30_000, () => 'no pending RateLimitsNotShared');
      expect(await value(`rate_limiter_fallback{namespace="${NAMESPACE}"}`)).to.equal(1);

      // The last recorded sample, once it saw the fallback, against the mean of the samples its
      // expression averaged.
      await waitFor(async () => ((await value(`slo:sli_error:ratio_rate5m{slo="limits-exact",namespace="${NAMESPACE}"}`)) ?? 0) > 0, 20_000);
      const [recorded] = await prometheus.queryRange(`slo:sli_error:ratio_rate5m{slo="limits-exact",namespace="${NAMESPACE}"}[10s]`);
      const [at, share] = recorded!.values.at(-1)!;
      const [fallback] = await prometheus.queryRange(`namespace:rate_limiter_fallback:max{namespace="${NAMESPACE}"}[5m]`, at);
      const states = fallback!.values.map(([, state]) => Number(state));
      expect(states.filter((state) => state === 1), 'samples in fallback').to.not.deep.equal([]);
      expect(Number(share)).to.be.closeTo(states.reduce((sum, state) => sum + state, 0) / states.length, 1e-9);
    });

    it('puts ApiAvailabilityBudgetBurn (page) in pending, and raises GatewayNoPetServiceBackend, when the pet service stops', async () => {
      traffic = new SteadyTraffic(stack.baseUrl);
      await stack.petService.stop();
      await waitFor(
        async () => {
          const active = await activeAlerts();
          // The second may have fired by then: its `for` is a minute.
          return active.includes('ApiAvailabilityBudgetBurn page pending') && active.some((alert) => /^GatewayNoPetServiceBackend page (pending|firing)$/.test(alert));
        },
        30_000,
        () => 'both alerts not pending yet',
      );
      expect(traffic.statuses.filter((status) => status === 503), '503s answered meanwhile').to.not.deep.equal([]);
      expect(await value(`pet_service_serving{namespace="${NAMESPACE}"}`)).to.equal(0);
      expect(await value(`slo:sli_error:ratio_rate5m{slo="availability",namespace="${NAMESPACE}"}`)).to.be.above(14.4 * 0.001);
    });

    it("puts TlsCertificateExpiring (ticket and page) in pending for the gateway's certificate when one with a day left is put on its files", async () => {
      const renewed = ca.issue('gateway', { use: 'client', validDays: 1 });
      // Key first, then certificate, as a rotation on disk does; the gateway reads them within 5 s.
      files.write('gateway.key', renewed.key);
      files.write('gateway.crt', renewed.cert);
      const pending = (alert: string): string => `TlsCertificateExpiring ${alert} pending`;
      await waitFor(
        async () => {
          const active = await activeAlerts();
          return active.includes(pending('ticket')) && active.includes(pending('page'));
        },
        30_000,
        () => 'TlsCertificateExpiring not pending',
      );
      const [alert, ...others] = (await prometheus.alerts()).filter(({ labels }) => labels.alertname === 'TlsCertificateExpiring' && labels.severity === 'page');
      expect(others, 'one certificate expires within 2 days').to.deep.equal([]);
      expect(alert!.labels).to.include({ job: 'gateway', certificate: 'own', namespace: NAMESPACE });
    });
  });
});
