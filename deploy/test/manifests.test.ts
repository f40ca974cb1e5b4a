import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { entrypoint, heapFlags, parseDockerfile } from './support/dockerfile';
import { type KubeObject, kubectlOrSkip, render } from './support/kubectl';
import { CREATED_OUTSIDE_GIT, KEYS_SECRET } from './support/external-secrets';
import { validateObject } from './support/kubernetes-schema';
import {
  checkAddresses,
  checkAdminPortsHidden,
  checkAuthentication,
  checkAvailability,
  checkContainers,
  checkEnvironment,
  checkNetworkPolicies,
  checkPorts,
  checkReferences,
  checkSecretFiles,
  checkSelectors,
  checkShutdown,
  checkTrustProxy,
  INTERNAL_CLIENT_LABEL,
} from './support/wiring';

/* eslint-disable @typescript-eslint/no-explicit-any -- broken copies are edited field by field */

const root = join(__dirname, '..', '..');
const overlays = ['staging', 'production'] as const;
type Overlay = (typeof overlays)[number];


/** The heap flags each service's image runs with, from its Dockerfile. */
const HEAP = Object.fromEntries(
  ['gateway', 'pet-service'].map((service) => {
    const stages = parseDockerfile(readFileSync(join(root, service, 'Dockerfile'), 'utf8')).stages;
    const flags = heapFlags(entrypoint(stages.at(-1)!) ?? []);
    if (flags === undefined) throw new Error(`${service}/Dockerfile: no heap flags`);
    return [service, flags];
  }),
);

const checks: Record<string, (objects: KubeObject[], overlay: Overlay) => string[]> = {
  'selectors match pod labels': (objects) => checkSelectors(objects),
  'target, probe and policy ports exist on the containers, which listen on them': (objects) => checkPorts(objects),
  'every variable set is read by the code; every one without a safe default is set': (objects) => checkEnvironment(objects),
  'ConfigMap, Secret and ServiceAccount references resolve': (objects, overlay) => checkReferences(objects, Object.keys({ ...CREATED_OUTSIDE_GIT[overlay], ...KEYS_SECRET })),
  'secrets reach the services as files from mounted Secrets, never as variables': (objects, overlay) => checkSecretFiles(objects, { ...CREATED_OUTSIDE_GIT[overlay], ...KEYS_SECRET }),
  'every internal hop authenticates: mutual TLS, Redis ACL users and Sentinel passwords, MongoDB keyfile': (objects) => checkAuthentication(objects),
  'NetworkPolicies admit exactly the intended clients': (objects) => checkNetworkPolicies(objects),
  'no Service exposes an admin port': (objects) => checkAdminPortsHidden(objects),
  'grace period > SHUTDOWN_DELAY_MS + preStop + SHUTDOWN_TIMEOUT_MS, with a drain pause': (objects) => checkShutdown(objects),
  'containers: non-root, read-only, no capabilities, resources fit the heap flags': (objects) => checkContainers(objects, HEAP),
  'addresses name the in-cluster Services of the namespace': (objects) => checkAddresses(objects),
  'TRUST_PROXY matches the ingress': (objects) => checkTrustProxy(objects),
  'autoscalers and disruption budgets': (objects) => checkAvailability(objects),
};

describe('deploy/ manifests', function () {
  const rendered = {} as Record<Overlay, KubeObject[]>;

  before(function () {
    const kubectl = kubectlOrSkip(this);
    for (const overlay of overlays) rendered[overlay] = render(kubectl, join(root, 'deploy', 'overlays', overlay));
  });

  for (const overlay of overlays) {
    describe(`overlays/${overlay}`, () => {
      it('validates against the Kubernetes OpenAPI schemas (offline, kubernetes-models), with no unknown field', () => {
        expect(rendered[overlay].length).to.be.greaterThan(20);
        expect(rendered[overlay].flatMap(validateObject)).to.deep.equal([]);
      });

      for (const [name, check] of Object.entries(checks)) {
        it(name, () => {
          expect(check(rendered[overlay], overlay)).to.deep.equal([]);
        });
      }
    });
  }

  describe('production is stricter than staging', () => {
    const hpa = (overlay: Overlay, name: string) => rendered[overlay].find((o: any) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === name) as any;
    const pod = (overlay: Overlay, name: string) => (rendered[overlay].find((o) => o.metadata.name === name && (o.kind === 'Deployment' || o.kind === 'StatefulSet')) as any).spec.template.spec;

    it('runs more replicas', () => {
      for (const name of ['gateway', 'pet-service']) {
        expect(hpa('production', name).spec.minReplicas, name).to.be.greaterThan(hpa('staging', name).spec.minReplicas);
        expect(hpa('production', name).spec.minReplicas, name).to.be.at.least(3);
      }
    });

    it('spreads replicas over nodes', () => {
      for (const name of ['gateway', 'pet-service', 'mongodb']) {
        const antiAffinity = pod('production', name).affinity?.podAntiAffinity;
        const terms = [...(antiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []), ...(antiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((t: any) => t.podAffinityTerm)];
        expect(terms.map((t: any) => t.topologyKey), name).to.include('kubernetes.io/hostname');
        expect(pod('staging', name).affinity, name).to.equal(undefined);
      }
      expect(pod('production', 'mongodb').affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution).to.have.length(1);
    });

    it('runs a Redis that survives losing a node: three members with Sentinels on distinct nodes, the gateways following them', () => {
      const redis = (overlay: Overlay) => rendered[overlay].find((o: any) => o.metadata.name === 'redis' && (o.kind === 'Deployment' || o.kind === 'StatefulSet')) as any;
      const gatewaySettings = (overlay: Overlay) => (rendered[overlay].find((o: any) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('gateway-settings')) as any).data;
      expect(redis('staging').kind).to.equal('Deployment');
      expect(redis('production').kind).to.equal('StatefulSet');
      expect(redis('production').spec.replicas).to.equal(3);
      expect(pod('production', 'redis').containers.map((c: any) => c.name)).to.deep.equal(['redis', 'sentinel']);
      expect(pod('production', 'redis').affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey).to.equal('kubernetes.io/hostname');
      expect(gatewaySettings('staging')).to.include.keys('REDIS_URL_FILE');
      expect(gatewaySettings('production')).to.not.have.any.keys('REDIS_URL', 'REDIS_CLUSTER_NODES');
      expect(gatewaySettings('production')).to.include.keys('REDIS_SENTINELS', 'REDIS_SENTINEL_MASTER');
    });

    it('reports a MongoDB member ready only as a primary or a secondary, in both overlays', () => {
      for (const overlay of overlays) {
        const probe = pod(overlay, 'mongodb').containers[0].readinessProbe;
        expect(probe.tcpSocket, overlay).to.equal(undefined);
        expect(probe.exec.command.join(' '), overlay).to.match(/db\.hello\(\).*isWritablePrimary \|\| hello\.secondary/);
        // What the deploy steps wait for before rs.initiate, which readiness needs (docs/deploy.md).
        expect(pod(overlay, 'mongodb').containers[0].startupProbe.tcpSocket, overlay).to.deep.equal({ port: 'mongodb' });
      }
    });

    it('spreads replicas over zones where the nodes have zones, and schedules where they have none', () => {
      for (const name of ['gateway', 'pet-service', 'mongodb']) {
        const zones = (pod('production', name).topologySpreadConstraints ?? []).filter((c: any) => c.topologyKey === 'topology.kubernetes.io/zone');
        expect(zones, name).to.have.length(1);
        expect(zones[0].labelSelector.matchLabels['app.kubernetes.io/name'], name).to.equal(name);
        expect(zones[0].whenUnsatisfiable, name).to.equal('ScheduleAnyway');
        expect(pod('staging', name).topologySpreadConstraints, name).to.equal(undefined);
      }
    });

    it('takes PAGE_TOKEN_SECRET from a Secret, as a file', () => {
      const spec = pod('production', 'pet-service');
      expect(spec.containers[0].env.find((e: any) => e.name === 'PAGE_TOKEN_SECRET_FILE').value).to.equal('/etc/petstore/page-token/PAGE_TOKEN_SECRET');
      expect(spec.volumes.find((v: any) => v.name === 'page-token').secret.secretName).to.equal('pet-service-page-token');
      expect(spec.containers[0].env.find((e: any) => e.name === 'PAGE_TOKEN_SECRET')).to.equal(undefined);
    });

    it('uses different image tags, and different resources', () => {
      const image = (overlay: Overlay) => pod(overlay, 'gateway').containers[0].image;
      expect(image('production')).to.not.equal(image('staging'));
      expect(pod('production', 'gateway').containers[0].resources).to.not.deep.equal(pod('staging', 'gateway').containers[0].resources);
    });

    it('lets browser pages call the API from the staging web app only (CORS_ORIGINS)', () => {
      const corsOrigins = (overlay: Overlay) =>
        (rendered[overlay].find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('gateway-settings')) as any).data.CORS_ORIGINS;
      expect(corsOrigins('staging')).to.equal('https://app.staging.petstore.example.com');
      expect(corsOrigins('production')).to.equal('');
    });

    // A placeholder collector address made every pod log ENOTFOUND once a minute (issue 34): traces
    // are exported only where the operator names a collector (docs/deploy.md#tracing).
    it('exports no traces until a collector is named, and has the sampling ready for it: a tenth in production', () => {
      for (const overlay of ['staging', 'production'] as const) {
        for (const settings of ['gateway-settings', 'pet-service-settings']) {
          const data = (rendered[overlay].find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith(settings)) as any).data;
          expect(Object.keys(data).filter((name) => /^OTEL_EXPORTER_OTLP_(TRACES_)?ENDPOINT$/.test(name)), `${overlay} ${settings}`).to.deep.equal([]);
          expect(data.OTEL_SDK_DISABLED, `${overlay} ${settings}`).to.equal(undefined);
          expect(data.OTEL_RESOURCE_ATTRIBUTES).to.equal(`deployment.environment.name=${overlay}`);
          expect(data.OTEL_TRACES_SAMPLER).to.equal('parentbased_traceidratio');
          expect(data.OTEL_TRACES_SAMPLER_ARG).to.equal(overlay === 'production' ? '0.1' : '1');
        }
      }
    });

    it('has an Ingress host per base address', () => {
      const hosts = (overlay: Overlay) => rendered[overlay].filter((o) => o.kind === 'Ingress').flatMap((o: any) => o.spec.rules.map((r: any) => r.host));
      expect(hosts('staging')).to.deep.equal(['api.staging.petstore.example.com']);
      expect(hosts('production')).to.deep.equal(['api.petstore.example.com']);
    });
  });

  describe('each check fails on a broken copy', () => {
    const copy = () => structuredClone(rendered.production);
    const named = (objects: KubeObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name) as any;
    const container = (objects: KubeObject[], name: string) => named(objects, 'Deployment', name).spec.template.spec.containers[0];
    const settings = (objects: KubeObject[], prefix: string) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith(prefix)) as any;
    const fails = (check: string, breakIt: (objects: KubeObject[]) => void, problem: RegExp) => {
      const objects = copy();
      breakIt(objects);
      expect(checks[check]!(objects, 'production').join('\n')).to.match(problem);
    };

    it('schema: a wrong type, and an unknown (misspelt) field', () => {
      const objects = copy();
      container(objects, 'gateway').resources.limits.memory = 'lots';
      expect(validateObject(named(objects, 'Deployment', 'gateway')).join()).to.match(/limits\/memory must match format "quantity"/);
      delete container(objects, 'gateway').resources.limits.memory;
      const security = container(objects, 'gateway').securityContext;
      security.readOnlyRootFileSystem = security.readOnlyRootFilesystem;
      delete security.readOnlyRootFilesystem;
      expect(validateObject(named(objects, 'Deployment', 'gateway'))).to.deep.equal(['Deployment/gateway: unknown field /spec/template/spec/containers/0/securityContext/readOnlyRootFileSystem']);
      named(objects, 'Service', 'pet-service').spec.ports[0].targetPort = { name: 'grpc' };
      expect(validateObject(named(objects, 'Service', 'pet-service')).join()).to.match(/targetPort must be string/);
      expect(validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).to.deep.equal(['Widget/w: no schema for example.com/v1 Widget']);
    });

    it('selectors: a Service, a PDB and an HPA aimed at nothing', () => {
      const check = 'selectors match pod labels';
      fails(check, (o) => (named(o, 'Service', 'gateway').spec.selector = { 'app.kubernetes.io/name': 'gatewy' }), /Service\/gateway: its selector matches no pod template/);
      fails(check, (o) => (named(o, 'PodDisruptionBudget', 'mongodb').spec.selector.matchLabels = { app: 'mongo' }), /PodDisruptionBudget\/mongodb: its selector/);
      fails(check, (o) => (named(o, 'HorizontalPodAutoscaler', 'pet-service').spec.scaleTargetRef.name = 'pets'), /scales Deployment\/pets, which does not exist/);
      fails(check, (o) => (named(o, 'NetworkPolicy', 'redis').spec.podSelector.matchLabels = { 'app.kubernetes.io/name': 'reds' }), /NetworkPolicy\/redis: its selector/);
    });

    it('ports: a target port, a probe port, a policy port, an ingress port, a container port the process does not listen on', () => {
      const check = 'target, probe and policy ports exist on the containers, which listen on them';
      fails(check, (o) => (named(o, 'Service', 'pet-service').spec.ports[0].targetPort = 'gprc'), /targetPort gprc is not a port of Deployment\/pet-service/);
      fails(check, (o) => (container(o, 'gateway').readinessProbe.httpGet.port = 'metrics'), /gateway readinessProbe port metrics is not a port/);
      fails(check, (o) => (container(o, 'pet-service').readinessProbe.httpGet.port = 50052), /readinessProbe port 50052/);
      fails(check, (o) => (named(o, 'NetworkPolicy', 'mongodb').spec.ingress[0].ports[0].port = 'mongo'), /NetworkPolicy\/mongodb: port mongo/);
      fails(check, (o) => (named(o, 'Ingress', 'gateway').spec.rules[0].http.paths[0].backend.service.port = { name: 'https' }), /backend port https/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.ADMIN_PORT = '9100'), /container port admin is 9090, but gateway listens on 9100/);
    });

    it('environment: a variable nobody reads, a required one missing, a value the service refuses', () => {
      const check = 'every variable set is read by the code; every one without a safe default is set';
      fails(check, (o) => (settings(o, 'gateway-settings').data.PET_SERVICE_ADRESS = 'x'), /PET_SERVICE_ADRESS is set, but gateway does not read it/);
      fails(check, (o) => container(o, 'pet-service').env.push({ name: 'REDIS_URL', value: 'redis://r' }), /REDIS_URL is set, but pet-service does not read it/);
      fails(check, (o) => delete settings(o, 'pet-service-settings').data.MONGODB_URI_FILE, /none of MONGODB_URI, MONGODB_URI_FILE is set/);
      fails(check, (o) => delete settings(o, 'pet-service-settings').data.GRPC_TLS_CLIENT_CA_FILE, /GRPC_TLS_CLIENT_CA_FILE is not set/);
      fails(check, (o) => delete settings(o, 'gateway-settings').data.PET_SERVICE_TLS_CERT_FILE, /PET_SERVICE_TLS_CERT_FILE is not set[\s\S]*PET_SERVICE_TLS_CERT_FILE: required with PET_SERVICE_TLS_KEY_FILE/);
      fails(check, (o) => delete settings(o, 'gateway-settings').data.SHUTDOWN_DELAY_MS, /SHUTDOWN_DELAY_MS is not set/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.GATEWAY_WORKERS = 'many'), /invalid configuration: GATEWAY_WORKERS/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.CORS_ORIGINS = 'https://app.example.com/'), /invalid configuration: CORS_ORIGINS/);
      fails(check, (o) => delete settings(o, 'gateway-settings').data.REDIS_SENTINELS, /none of REDIS_URL, REDIS_URL_FILE, REDIS_CLUSTER_NODES, REDIS_SENTINELS is set/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.REDIS_URL = 'redis://redis:6379'), /invalid configuration: REDIS_URL and REDIS_SENTINELS: set only one/);
      fails(check, (o) => delete settings(o, 'gateway-settings').data.REDIS_SENTINEL_MASTER, /invalid configuration: REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS/);
    });

    it('references: a missing ConfigMap, Secret key and ServiceAccount; an out-of-git Secret rendered', () => {
      const check = 'ConfigMap, Secret and ServiceAccount references resolve';
      fails(check, (o) => (container(o, 'gateway').envFrom[0].configMapRef.name = 'gateway-settings'), /ConfigMap gateway-settings does not exist/);
      fails(check, (o) => (named(o, 'Deployment', 'gateway').spec.template.spec.volumes[0].secret.secretName = 'api-keys'), /Secret api-keys does not exist/);
      fails(check, (o) => (named(o, 'Deployment', 'pet-service').spec.template.spec.volumes[0].secret.secretName = 'page-token'), /Secret page-token does not exist/);
      fails(check, (o) => (named(o, 'Deployment', 'gateway').spec.template.spec.serviceAccountName = 'edge'), /ServiceAccount edge does not exist/);
      fails(check, (o) => (container(o, 'gateway').volumeMounts[0].name = 'keys'), /mounts volume keys, which the pod does not define/);
      fails(check, (o) => o.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pet-service-page-token', namespace: 'petstore' }, data: { PAGE_TOKEN_SECRET: 'eA==' } }), /created outside git, but the manifests render one/);
      fails(check, (o) => (named(o, 'StatefulSet', 'mongodb').spec.template.spec.volumes.find((v: any) => v.name === 'auth').secret.secretName = 'mongo-auth'), /StatefulSet\/mongodb: Secret mongo-auth does not exist/);
      const objects = copy();
      container(objects, 'gateway').env = [{ name: 'LOG_LEVEL', valueFrom: { configMapKeyRef: { name: settings(objects, 'gateway-settings').metadata.name, key: 'LOG_LEVL' } } }];
      expect(checkReferences(objects).join('\n')).to.match(/has no key LOG_LEVL/);
    });

    it('network policies: a policy too open, one too closed, an internal client unlabelled', () => {
      const check = 'NetworkPolicies admit exactly the intended clients';
      fails(check, (o) => delete named(o, 'NetworkPolicy', 'mongodb').spec.ingress[0].from, /the gateway can reach mongodb's mongodb port/);
      fails(check, (o) => o.splice(o.indexOf(named(o, 'NetworkPolicy', 'mongodb')), 1), /the pet service cannot reach mongodb's mongodb port/);
      fails(check, (o) => (named(o, 'NetworkPolicy', 'redis').spec.ingress[0].from[0].podSelector.matchLabels = { 'app.kubernetes.io/name': 'pet-service' }), /the gateway cannot reach redis's redis port[\s\S]*the pet service can reach redis/);
      fails(check, (o) => named(o, 'NetworkPolicy', 'redis').spec.ingress[0].from.pop(), /a Redis member cannot reach redis's redis port[\s\S]*a Redis member cannot reach redis's sentinel port/);
      fails(check, (o) => named(o, 'NetworkPolicy', 'redis').spec.ingress[0].ports.pop(), /the gateway cannot reach redis's sentinel port/);
      fails(check, (o) => named(o, 'NetworkPolicy', 'pet-service').spec.ingress[0].from.pop(), /an internal client cannot reach pet-service's grpc port/);
      fails(check, (o) => delete named(o, 'NetworkPolicy', 'gateway').spec.ingress[1].from, /an unlabelled pod can reach gateway's admin port/);
      fails(check, (o) => delete named(o, 'NetworkPolicy', 'gateway').spec.ingress[0].from[0].namespaceSelector, /the ingress controller cannot reach gateway's http port/);
      expect(INTERNAL_CLIENT_LABEL).to.deep.equal(named(copy(), 'NetworkPolicy', 'pet-service').spec.ingress[0].from[1].podSelector.matchLabels);
    });

    it('secret files: a secret as a variable, from a secretKeyRef, a file outside any Secret, a key the Secret lacks', () => {
      const check = 'secrets reach the services as files from mounted Secrets, never as variables';
      fails(check, (o) => (settings(o, 'gateway-settings').data.ADMIN_TOKEN = 'a-token-in-a-configmap'), /Deployment\/gateway: ADMIN_TOKEN is a variable; give it as a file \(ADMIN_TOKEN_FILE\)/);
      fails(
        check,
        (o) => container(o, 'pet-service').env.push({ name: 'MONGODB_DB', valueFrom: { secretKeyRef: { name: 'pet-service-mongodb', key: 'db' } } }),
        /MONGODB_DB comes from a secretKeyRef; mount the Secret/,
      );
      fails(check, (o) => (settings(o, 'pet-service-settings').data.GRPC_TLS_CLIENT_CA_FILE = '/etc/ssl/ca.crt'), /GRPC_TLS_CLIENT_CA_FILE \/etc\/ssl\/ca\.crt is not in a Secret mounted in pet-service/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.REDIS_PASSWORD_FILE = '/etc/petstore/redis/passwd'), /REDIS_PASSWORD_FILE \/etc\/petstore\/redis\/passwd: Secret gateway-redis has no key passwd/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.PET_SERVICE_TLS_CERT_FILE = '/etc/petstore/api-keys/tls.crt'), /Secret gateway-api-keys.* has no key tls\.crt/);
    });

    it('authentication: a Redis without its ACL file, replicas without masterauth, a Sentinel without a password, MongoDB without a keyfile', () => {
      const check = 'every internal hop authenticates: mutual TLS, Redis ACL users and Sentinel passwords, MongoDB keyfile';
      const scripts = (o: KubeObject[]) => (o.find((object) => object.kind === 'ConfigMap' && object.metadata.name.startsWith('redis-sentinel-scripts')) as any).data;
      fails(check, (o) => (scripts(o)['start-redis.sh'] = scripts(o)['start-redis.sh'].replace(/--aclfile "[^"]+"/, '')), /StatefulSet\/redis redis: Redis does not start with an ACL file/);
      fails(check, (o) => (scripts(o)['start-redis.sh'] = scripts(o)['start-redis.sh'].replaceAll('masterauth', 'masterpass')), /the replicas do not authenticate to the master/);
      fails(check, (o) => (scripts(o)['start-sentinel.sh'] = scripts(o)['start-sentinel.sh'].replace(/^requirepass.*$/m, '')), /StatefulSet\/redis sentinel: the Sentinel requires no password/);
      fails(check, (o) => (scripts(o)['start-sentinel.sh'] = scripts(o)['start-sentinel.sh'].replace(/^sentinel auth-pass.*$/m, '')), /no credentials for the data nodes/);
      fails(
        check,
        (o) => (named(o, 'StatefulSet', 'mongodb').spec.template.spec.containers[0].args = named(o, 'StatefulSet', 'mongodb').spec.template.spec.containers[0].args.filter((a: string) => !a.startsWith('--keyFile'))),
        /StatefulSet\/mongodb mongodb: MongoDB runs without authentication/,
      );
      const staging = structuredClone(rendered.staging);
      const redis = (staging.find((o) => o.kind === 'Deployment' && o.metadata.name === 'redis') as any).spec.template.spec.containers[0];
      redis.command = ['redis-server', '--protected-mode', 'no'];
      expect(checkAuthentication(staging).join('\n')).to.match(/Deployment\/redis redis: Redis does not start with an ACL file/);
    });

    it('admin ports: a Service port aimed at the admin port', () => {
      fails('no Service exposes an admin port', (o) => named(o, 'Service', 'gateway').spec.ports.push({ name: 'metrics', port: 9090, targetPort: 'admin' }), /Service\/gateway: exposes gateway's admin port 9090/);
    });

    it('shutdown: a grace period too short, no drain pause, a pet service gone before gateways can resolve; a preStop sleep counts', () => {
      const check = 'grace period > SHUTDOWN_DELAY_MS + preStop + SHUTDOWN_TIMEOUT_MS, with a drain pause';
      fails(check, (o) => (named(o, 'Deployment', 'gateway').spec.template.spec.terminationGracePeriodSeconds = 15), /terminationGracePeriodSeconds 15 s does not exceed .* = 15000 ms/);
      fails(check, (o) => (settings(o, 'pet-service-settings').data.SHUTDOWN_TIMEOUT_MS = '30000'), /Deployment\/pet-service: terminationGracePeriodSeconds 30 s/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.SHUTDOWN_DELAY_MS = '0'), /Deployment\/gateway: drain pause 0 ms/);
      fails(check, (o) => (settings(o, 'pet-service-settings').data.SHUTDOWN_DELAY_MS = '5000'), /Deployment\/pet-service: drain pause 5000 ms is under the gateways' resolution interval plus the DNS TTL, 15000 ms/);
      fails(check, (o) => (container(o, 'gateway').lifecycle = { preStop: { sleep: { seconds: 20 } } }), /= 35000 ms/);
      const objects = copy();
      settings(objects, 'gateway-settings').data.SHUTDOWN_DELAY_MS = '0';
      container(objects, 'gateway').lifecycle = { preStop: { exec: { command: ['sleep', '5'] } } };
      expect(checkShutdown(objects)).to.deep.equal([]);
    });

    it('containers: root, writable, capabilities, escalation, no limits, memory that does not fit the heap', () => {
      const check = 'containers: non-root, read-only, no capabilities, resources fit the heap flags';
      const mongo = (o: KubeObject[]) => named(o, 'StatefulSet', 'mongodb').spec.template.spec;
      fails(check, (o) => (mongo(o).securityContext.runAsUser = 0), /mongodb mongodb: runs as uid 0/);
      fails(
        check,
        (o) => {
          delete mongo(o).securityContext.runAsNonRoot;
          delete mongo(o).containers[0].securityContext.runAsNonRoot;
        },
        /runAsNonRoot is not true/,
      );
      fails(check, (o) => (named(o, 'StatefulSet', 'redis').spec.template.spec.containers[1].securityContext.readOnlyRootFilesystem = false), /redis sentinel: root filesystem is writable/);
      fails(check, (o) => delete named(o, 'StatefulSet', 'redis').spec.template.spec.containers[1].resources.limits.memory, /sentinel: no memory limit/);
      fails(check, (o) => (container(o, 'gateway').securityContext.capabilities = { drop: ['NET_RAW'] }), /capabilities are not all dropped/);
      fails(check, (o) => (container(o, 'gateway').securityContext.capabilities.add = ['NET_BIND_SERVICE']), /adds capabilities/);
      fails(check, (o) => delete container(o, 'pet-service').securityContext.allowPrivilegeEscalation, /allowPrivilegeEscalation is not false/);
      fails(check, (o) => delete container(o, 'pet-service').resources.limits.cpu, /pet-service: no cpu limit/);
      fails(check, (o) => (container(o, 'gateway').resources.limits.memory = '128Mi'), /memory limit 128 Mi is below heap 76 Mi \+ 106 Mi|memory request 192 Mi differs/);
      fails(check, (o) => (container(o, 'pet-service').resources = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }), /memory limit 1024 Mi is over twice/);
      fails(check, (o) => (container(o, 'gateway').resources.requests.memory = '64Mi'), /memory request 64 Mi differs from the limit 192 Mi/);
    });

    it('addresses: the wrong namespace, a ClusterIP pet service, a missing member', () => {
      const check = 'addresses name the in-cluster Services of the namespace';
      fails(check, (o) => (settings(o, 'gateway-settings').data.PET_SERVICE_ADDR = 'dns:///pet-service.petstore-staging.svc.cluster.local:50051'), /PET_SERVICE_ADDR is .*petstore-staging.*, not dns:\/\/\/pet-service.petstore.svc/);
      fails(check, (o) => delete named(o, 'Service', 'pet-service').spec.clusterIP, /not headless/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.REDIS_URL = 'redis://redis:6379'), /REDIS_URL is redis:\/\/redis:6379/);
      fails(check, (o) => (named(o, 'StatefulSet', 'redis').spec.replicas = 5), /REDIS_SENTINELS .* are not the members' Sentinels .*redis-4\.redis\.petstore\.svc\.cluster\.local:26379/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.REDIS_SENTINEL_MASTER = 'mymaster'), /REDIS_SENTINEL_MASTER is mymaster, but the Sentinels monitor petstore-limits/);
    });

    it('TRUST_PROXY: false or true behind an Ingress; set with none', () => {
      const check = 'TRUST_PROXY matches the ingress';
      fails(check, (o) => (settings(o, 'gateway-settings').data.TRUST_PROXY = 'false'), /behind an Ingress, TRUST_PROXY must name the ingress hop/);
      fails(check, (o) => (settings(o, 'gateway-settings').data.TRUST_PROXY = 'true'), /not true/);
      fails(check, (o) => o.splice(o.indexOf(named(o, 'Ingress', 'gateway')), 1), /no Ingress in front, but TRUST_PROXY is 1/);
    });

    it('availability: a missing autoscaler and disruption budget', () => {
      const check = 'autoscalers and disruption budgets';
      fails(check, (o) => o.splice(o.indexOf(named(o, 'HorizontalPodAutoscaler', 'gateway')), 1), /gateway: no HorizontalPodAutoscaler/);
      fails(check, (o) => o.splice(o.indexOf(named(o, 'PodDisruptionBudget', 'mongodb')), 1), /mongodb: no PodDisruptionBudget/);
      fails(check, (o) => o.splice(o.indexOf(named(o, 'PodDisruptionBudget', 'redis')), 1), /redis: no PodDisruptionBudget/);
      const queueMetric = (o: KubeObject[]) => named(o, 'HorizontalPodAutoscaler', 'pet-service').spec.metrics.find((m: any) => m.type === 'Pods');
      fails(check, (o) => (queueMetric(o).pods.metric.name = 'pet_store_write_queue'), /pet_store_write_queue is not one the service exports/);
      fails(check, (o) => (named(o, 'HorizontalPodAutoscaler', 'pet-service').spec.metrics = [named(o, 'HorizontalPodAutoscaler', 'pet-service').spec.metrics[0]]), /does not scale on pet_store_writes_queued/);
    });
  });
});
