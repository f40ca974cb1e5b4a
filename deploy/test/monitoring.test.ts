import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse, stringify } from 'yaml';
import { PROMETHEUS_RULE_FILE, renderPrometheusRule, ruleFiles, ruleGroups } from '../../scripts/generate-monitoring';
import { dashboard, selectorsOf } from '../../system-test/support/monitoring-files';
import { promtoolOrSkip } from '../../system-test/support/prometheus';
import { openApiDocument } from '../../gateway/src/http/openapi/document';
import { alertCoverageProblems, headingAnchors, type RuleTestFile } from './support/alert-coverage';
import { documentedLatencyBounds, documentedOperations, latencyCoverageProblems } from './support/latency-coverage';
import { type KubeObject, kubectlOrSkip, render } from './support/kubectl';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are read field by field */

const root = join(__dirname, '..', '..');
const monitoring = join(root, 'deploy', 'monitoring');
const testsDir = join(monitoring, 'tests');
const testFiles = readdirSync(testsDir)
  .filter((name) => name.endsWith('.test.yaml'))
  .map((name) => join(testsDir, name));
const runbook = readFileSync(join(root, 'docs', 'runbooks.md'), 'utf8');
const sloDoc = readFileSync(join(root, 'docs', 'slo.md'), 'utf8');
/** The windows over which every SLI is recorded (docs/slo.md#alerts). */
const WINDOWS = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'];
const readTests = (): RuleTestFile[] => testFiles.map((file) => parse(readFileSync(file, 'utf8')) as RuleTestFile);

describe('deploy/monitoring: the rules, their unit tests, the PrometheusRule, the dashboard', () => {
  describe('promtool (Debian package prometheus)', function () {
    this.timeout(60_000);
    let promtool: string;
    before(function () {
      promtool = promtoolOrSkip(this);
    });

    it('checks every rules file', () => {
      // Throws, with promtool's output, on any problem.
      execFileSync(promtool, ['check', 'rules', ...ruleFiles()], { encoding: 'utf8' });
    });

    it('passes every unit test of tests/', () => {
      execFileSync(promtool, ['test', 'rules', ...testFiles], { encoding: 'utf8', cwd: testsDir });
    });

    it('fails a unit test that expects what the rules do not do', () => {
      const dir = mkdtempSync(join(tmpdir(), 'promtool-'));
      try {
        const broken = readFileSync(join(testsDir, 'causes.test.yaml'), 'utf8')
          .replace('../rules/causes.yaml', join(monitoring, 'rules', 'causes.yaml'))
          .replace("exp_labels: { severity: ticket, namespace: petstore, instance: '10.0.0.1:9090' }", "exp_labels: { severity: page, namespace: petstore, instance: '10.0.0.1:9090' }");
        writeFileSync(join(dir, 'broken.test.yaml'), broken);
        expect(() => execFileSync(promtool, ['test', 'rules', join(dir, 'broken.test.yaml')], { encoding: 'utf8', stdio: 'pipe' })).to.throw(/ApiKeysFileRejected/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('every alert', () => {
    it('has a severity, a runbook section, and a unit test in which it fires and one in which it stays silent', () => {
      expect(alertCoverageProblems(ruleGroups(), readTests(), runbook)).to.deep.equal([]);
    });

    it('is reported when one of those is missing', () => {
      const groups = structuredClone(ruleGroups()) as any[];
      const causes = groups.find((group) => group.name === 'petstore-causes');
      causes.rules.find((rule: any) => rule.alert === 'PetStoreUnhealthy').annotations.runbook_url = 'docs/runbooks.md#petstore-unhealthy';
      causes.rules.push({ alert: 'Untested', expr: 'vector(1)', labels: { severity: 'page' }, annotations: { runbook_url: 'docs/runbooks.md#petstoreunhealthy' } });
      const tests = readTests().map((file) => ({
        ...file,
        tests: file.tests.map((test) => ({ ...test, alert_rule_test: test.alert_rule_test?.filter((evaluation) => evaluation.alertname !== 'RateLimitsNotShared' || (evaluation.exp_alerts ?? []).length > 0) })),
      }));
      expect(alertCoverageProblems(groups, tests, runbook)).to.deep.equal([
        'RateLimitsNotShared (ticket): no unit test in which it stays silent',
        'PetStoreUnhealthy (page): runbook_url docs/runbooks.md#petstore-unhealthy names no section of docs/runbooks.md',
        'Untested (page): no unit test in which it fires',
        'Untested (page): no unit test in which it stays silent',
      ]);
    });

    it('reads runbook anchors as GitHub makes them', () => {
      expect([...headingAnchors('# Runbooks\n## RateLimitsNotShared\n### Scraping: the `job` label\ntext # not a heading\n')]).to.deep.equal([
        'runbooks',
        'ratelimitsnotshared',
        'scraping-the-job-label',
      ]);
    });
  });

  describe('the latency SLO', () => {
    const operations = documentedOperations(openApiDocument);

    it('judges every operation of the OpenAPI document, in every window, at the bound docs/slo.md gives it, and counts it in the denominator', () => {
      expect(operations).to.include.members(['GET /v1/pets', 'POST /v1/pets', 'GET /v1/pets/:petId', 'PATCH /v1/pets/:petId', 'DELETE /v1/pets/:petId']);
      expect(latencyCoverageProblems(ruleGroups(), operations, documentedLatencyBounds(sloDoc), WINDOWS)).to.deep.equal([]);
    });

    it('is reported when an operation is left out of a window, its denominator or docs/slo.md, or judged at another bound', () => {
      const groups = structuredClone(ruleGroups()) as any[];
      const latency = groups.find((group) => group.name === 'petstore-slo-latency');
      const rule = (window: string) => latency.rules.find((candidate: any) => candidate.record === `slo:sli_error:ratio_rate${window}`);
      rule('30m').expr = rule('30m').expr.replace(/\s*or\s*rate\([^)]*method="DELETE"[^)]*\)/, '');
      rule('1h').expr = rule('1h').expr.replace(/method=~"[^"]*"/, 'method=~"GET|POST"');
      rule('6h').expr = rule('6h').expr.replace(/(method="PATCH",route="\/v1\/pets\/:petId",le=)"0\.5"/, '$1"1"');
      latency.rules = latency.rules.filter((candidate: any) => candidate.record !== 'slo:sli_error:ratio_rate3d');
      const bounds = documentedLatencyBounds(sloDoc);
      bounds.delete('DELETE /v1/pets/:petId');
      expect(latencyCoverageProblems(groups, operations, bounds, WINDOWS)).to.deep.equal([
        'docs/slo.md: DELETE /v1/pets/:petId has no bound',
        'slo:sli_error:ratio_rate30m: DELETE /v1/pets/:petId not judged',
        'slo:sli_error:ratio_rate1h: PATCH /v1/pets/:petId not counted in the denominator',
        'slo:sli_error:ratio_rate1h: DELETE /v1/pets/:petId not counted in the denominator',
        'slo:sli_error:ratio_rate6h: PATCH /v1/pets/:petId within 1000 ms, docs/slo.md says 500 ms',
        'slo:sli_error:ratio_rate3d: no latency rule',
      ]);
    });
  });

  it('has a unit-test file for each rules file, and loads nothing else', () => {
    const loaded = readTests().flatMap((file) => file.rule_files.map((path) => join(testsDir, path)));
    expect([...new Set(loaded)].sort()).to.deep.equal(ruleFiles());
  });

  it('gives the Prometheus Operator the same groups as the rules files, regenerated (npm run generate:monitoring)', () => {
    const text = readFileSync(PROMETHEUS_RULE_FILE, 'utf8');
    expect((parse(text) as { spec: { groups: unknown } }).spec.groups).to.deep.equal(ruleGroups());
    expect(text, 'run npm run generate:monitoring').to.equal(renderPrometheusRule());
  });

  describe('the Grafana dashboard', () => {
    const board = dashboard();
    const panels = board.panels.filter((panel) => panel.type !== 'row');

    it('queries the data source variable in every panel and target, with panels on the grid, none overlapping', () => {
      expect(new Set(board.panels.map((panel) => panel.id)).size, 'unique panel ids').to.equal(board.panels.length);
      for (const panel of panels) {
        expect(panel.datasource?.uid, panel.title).to.equal('${datasource}');
        expect(panel.targets ?? [], panel.title).to.not.have.length(0);
        for (const target of panel.targets!) expect(target.datasource?.uid, panel.title).to.equal('${datasource}');
        expect(panel.gridPos.x + panel.gridPos.w, panel.title).to.be.at.most(24);
      }
      const cells = new Map<string, string>();
      for (const panel of board.panels) {
        const { x, y, w, h } = panel.gridPos;
        for (let row = y; row < y + h; row += 1) {
          for (let column = x; column < x + w; column += 1) {
            const taken = cells.get(`${row},${column}`);
            expect(taken, `${panel.title} overlaps ${taken}`).to.equal(undefined);
            cells.set(`${row},${column}`, panel.title);
          }
        }
      }
    });

    it('shows what an operator looks for: requests, errors and latency; limits, fallback and keys; the pet service, its store and write queue; processes', () => {
      const metrics = new Set(panels.flatMap((panel) => panel.targets!.flatMap((target) => selectorsOf(target.expr).map((selector) => selector.name))));
      expect([...metrics]).to.include.members([
        'http_requests_total',
        'http_request_duration_seconds_bucket',
        'rate_limit_decisions_total',
        'rate_limiter_fallback',
        'rate_limiter_redis_misconfigurations_total',
        'api_keys_last_reload_successful',
        'grpc_client_handled_total',
        'pet_service_serving',
        'grpc_server_handled_total',
        'pet_store_operation_seconds_bucket',
        'pet_store_writes_queued',
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_p99_seconds',
        'slo:sli_error:ratio_rate1h',
      ]);
    });

    it("splits the gateway's requests, errors and latency by route and method, as the latency SLO judges them: a route's methods have bounds of their own", () => {
      const requestPanels = panels.filter((panel) => panel.targets!.some((target) => /\bhttp_request(s_total|_duration_seconds_bucket)\{/.test(target.expr)));
      expect(requestPanels.map((panel) => panel.title)).to.have.length.of.at.least(4);
      for (const panel of requestPanels) {
        for (const target of panel.targets!) {
          const grouped = /\bsum by \(([^)]*)\)/.exec(target.expr)?.[1]?.split(',').map((label) => label.trim());
          expect(grouped, `${panel.title}: ${target.expr}`).to.include.members(['route', 'method']);
        }
      }
    });
  });

  it('reads the selectors of an expression: names, matchers and Grafana variables, not functions, keywords or label lists', () => {
    const expr = 'histogram_quantile(0.99, sum by (route, le) (rate(a_bucket{job="gateway",route=~"/v1/pets|x",namespace="$namespace"}[$__rate_interval]))) > on (route) group_left b:c:d or 0 * up';
    expect(selectorsOf(expr)).to.deep.equal([
      {
        name: 'a_bucket',
        matchers: [
          { label: 'job', op: '=', value: 'gateway' },
          { label: 'route', op: '=~', value: '/v1/pets|x' },
          { label: 'namespace', op: '=', value: '$namespace' },
        ],
      },
      { name: 'b:c:d', matchers: [] },
      { name: 'up', matchers: [] },
    ]);
  });

  describe('the Prometheus Operator component, included in each overlay', function () {
    this.timeout(60_000);
    const overlays = { staging: 'petstore-staging', production: 'petstore' } as const;
    const rendered = {} as Record<keyof typeof overlays, { without: KubeObject[]; with: KubeObject[] }>;
    let copy: string;

    before(function () {
      const kubectl = kubectlOrSkip(this);
      // A copy of deploy/ whose overlays include the component as docs/slo.md tells operators to.
      copy = mkdtempSync(join(tmpdir(), 'deploy-'));
      for (const dir of ['base', 'overlays', 'monitoring']) cpSync(join(root, 'deploy', dir), join(copy, dir), { recursive: true });
      for (const overlay of Object.keys(overlays) as Array<keyof typeof overlays>) {
        const file = join(copy, 'overlays', overlay, 'kustomization.yaml');
        const kustomization = parse(readFileSync(file, 'utf8')) as { components?: string[] };
        kustomization.components = [...(kustomization.components ?? []), '../../monitoring/prometheus-operator'];
        writeFileSync(file, stringify(kustomization));
        rendered[overlay] = { without: render(kubectl, join(root, 'deploy', 'overlays', overlay)), with: render(kubectl, join(copy, 'overlays', overlay)) };
      }
    });
    after(() => {
      if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
    });

    for (const [overlay, namespace] of Object.entries(overlays) as Array<[keyof typeof overlays, string]>) {
      it(`${overlay}: adds the PrometheusRule and a PodMonitor per service in ${namespace}, and changes nothing else`, () => {
        const { without, with: included } = rendered[overlay];
        const added = included.filter((object) => object.apiVersion === 'monitoring.coreos.com/v1');
        expect(added.map((object) => `${object.kind}/${object.metadata.name} ${object.metadata.namespace}`).sort()).to.deep.equal([
          `PodMonitor/gateway ${namespace}`,
          `PodMonitor/pet-service ${namespace}`,
          `PrometheusRule/petstore ${namespace}`,
        ]);
        expect((added.find((object) => object.kind === 'PrometheusRule') as any).spec.groups).to.deep.equal(ruleGroups());
        expect(included.filter((object) => !added.includes(object))).to.deep.equal(without);
      });

      it(`${overlay}: each PodMonitor selects its service's pods, scrapes their admin port, and names the job the rules select`, () => {
        const monitors = rendered[overlay].with.filter((object) => object.kind === 'PodMonitor') as any[];
        for (const monitor of monitors) {
          const service = monitor.metadata.name as string;
          const deployment = rendered[overlay].with.find((object) => object.kind === 'Deployment' && object.metadata.name === service) as any;
          const podLabels = deployment.spec.template.metadata.labels as Record<string, string>;
          expect(podLabels, service).to.include(monitor.spec.selector.matchLabels);
          expect(podLabels[monitor.spec.jobLabel], `${service}: the job`).to.equal(service);
          const ports = deployment.spec.template.spec.containers.flatMap((container: any) => container.ports.map((port: any) => port.name));
          expect(monitor.spec.podMetricsEndpoints.map((endpoint: any) => endpoint.port), service).to.deep.equal(['admin']);
          expect(ports, service).to.include('admin');
        }
        expect(monitors.map((monitor) => monitor.metadata.name).sort()).to.deep.equal(['gateway', 'pet-service']);
      });
    }
  });
});
