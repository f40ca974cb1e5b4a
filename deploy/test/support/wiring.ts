import {
  ENVIRONMENT_VARIABLES as GATEWAY_VARIABLES,
  parseConfig as parseGatewayConfig,
  SECRET_VARIABLES as GATEWAY_SECRETS,
} from '../../../gateway/src/config';
import {
  ENVIRONMENT_VARIABLES as PET_SERVICE_VARIABLES,
  parseConfig as parsePetServiceConfig,
  SECRET_VARIABLES as PET_SERVICE_SECRETS,
} from '../../../pet-service/src/config';
import { createMetrics as createPetServiceMetrics } from '../../../pet-service/src/observability/metrics';
import { MIN_RESOLUTION_INTERVAL_MS } from '@petstore/proto';
import type { KubeObject } from './kubectl';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are checked field by field */

type Labels = Record<string, string>;
interface Selector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A pod template of a Deployment or StatefulSet. */
export interface Workload {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Labels;
  readonly pod: any;
  readonly object: any;
}

/** What the checks know about each of the two services, keyed by container name. */
interface ServiceFacts {
  readonly variables: readonly string[];
  /**
   * Settings whose default is wrong in a cluster, so the manifests must set them; a list is
   * alternatives, of which one must be set (not empty).
   */
  readonly required: readonly (string | readonly string[])[];
  /** Parses the settings as the service does at start-up; throws on a bad one. */
  parse(env: Record<string, string>): { shutdownTimeoutMs: number; shutdownDelayMs: number; adminPort: number; port: number };
  /** Which setting each named container port must equal. */
  readonly portNames: Record<string, 'port' | 'adminPort'>;
  /** The secrets it also takes as `<NAME>_FILE`: in a cluster, only as files. */
  readonly secrets: readonly string[];
  /** Variables naming files the service reads (TLS), which must be in a mounted Secret too. */
  readonly files: readonly string[];
}

export const SERVICES: Record<string, ServiceFacts> = {
  gateway: {
    variables: GATEWAY_VARIABLES,
    // The defaults: localhost, the demo keys, counters per process, no proxy, no drain pause.
    // And plaintext to the pet service.
    required: [
      'PET_SERVICE_ADDR',
      'API_KEYS_FILE',
      ['REDIS_URL', 'REDIS_URL_FILE', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'],
      'SHUTDOWN_DELAY_MS',
      'PET_SERVICE_TLS_CA_FILE',
      'PET_SERVICE_TLS_CERT_FILE',
      'PET_SERVICE_TLS_KEY_FILE',
    ],
    parse: (env) => parseGatewayConfig(standInSecrets(env, GATEWAY_SECRETS), ''),
    portNames: { http: 'port', admin: 'adminPort' },
    secrets: GATEWAY_SECRETS,
    files: ['PET_SERVICE_TLS_CA_FILE', 'PET_SERVICE_TLS_CERT_FILE', 'PET_SERVICE_TLS_KEY_FILE'],
  },
  'pet-service': {
    variables: PET_SERVICE_VARIABLES,
    // The defaults: the in-memory store, no drain pause, plaintext gRPC from any caller.
    required: [['MONGODB_URI', 'MONGODB_URI_FILE'], 'SHUTDOWN_DELAY_MS', 'GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE', 'GRPC_TLS_CLIENT_CA_FILE'],
    parse: (env) => parsePetServiceConfig(standInSecrets(env, PET_SERVICE_SECRETS)),
    portNames: { grpc: 'port', admin: 'adminPort' },
    secrets: PET_SERVICE_SECRETS,
    files: ['GRPC_TLS_CERT_FILE', 'GRPC_TLS_KEY_FILE', 'GRPC_TLS_CLIENT_CA_FILE'],
  },
};

/**
 * A valid value for each secret given as a file (the file is in a Secret the manifests do not
 * render), so the settings parse as the service would parse them with the file read.
 */
const STAND_INS: Record<string, string> = {
  MONGODB_URI: 'mongodb://petstore:stand-in@mongodb-0.mongodb:27017/petstore?replicaSet=rs0&authSource=petstore',
  REDIS_URL: 'redis://gateway:stand-in@redis:6379',
};

function standInSecrets(env: Record<string, string>, secrets: readonly string[]): Record<string, string> {
  const resolved = { ...env };
  for (const name of secrets) {
    if (env[`${name}_FILE`] !== undefined && env[name] === undefined) resolved[name] = STAND_INS[name] ?? 'a-stand-in-secret-of-some-length';
  }
  return resolved;
}

const namespaceOf = (object: KubeObject) => object.metadata.namespace ?? 'default';

export function workloads(objects: readonly KubeObject[]): Workload[] {
  return objects
    .filter((object) => object.kind === 'Deployment' || object.kind === 'StatefulSet')
    .map((object: any) => ({
      kind: object.kind,
      name: object.metadata.name,
      namespace: namespaceOf(object),
      labels: object.spec?.template?.metadata?.labels ?? {},
      pod: object.spec?.template?.spec ?? {},
      object,
    }));
}

export function selects(selector: Selector | undefined, labels: Labels): boolean {
  if (selector === undefined) return false;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In':
        return values.includes(labels[key] ?? '');
      case 'NotIn':
        return !values.includes(labels[key] ?? '');
      case 'Exists':
        return key in labels;
      case 'DoesNotExist':
        return !(key in labels);
      default:
        return false;
    }
  });
  return byLabels && byExpressions;
}

/** The number a container port reference (name or number) resolves to in a pod, if any. */
export function resolvePort(pod: any, port: string | number, container?: any): number | undefined {
  const containers: any[] = container === undefined ? (pod.containers ?? []) : [container];
  for (const candidate of containers) {
    for (const declared of candidate.ports ?? []) {
      if (declared.name === port || declared.containerPort === port) return declared.containerPort as number;
    }
  }
  return undefined;
}

function find(objects: readonly KubeObject[], kind: string, name: string, namespace: string): any {
  return objects.find((object) => object.kind === kind && object.metadata.name === name && namespaceOf(object) === namespace);
}

function secretValue(secret: any, key: string): string | undefined {
  if (secret.stringData?.[key] !== undefined) return String(secret.stringData[key]);
  if (secret.data?.[key] !== undefined) return Buffer.from(String(secret.data[key]), 'base64').toString('utf8');
  return undefined;
}

/**
 * The environment a container starts with: envFrom ConfigMaps and Secrets, then env. Values from
 * a Secret that is not rendered (created outside git) stand in as a placeholder.
 */
export function containerEnvironment(objects: readonly KubeObject[], namespace: string, container: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef !== undefined) {
      Object.assign(env, find(objects, 'ConfigMap', source.configMapRef.name, namespace)?.data ?? {});
    }
    if (source.secretRef !== undefined) {
      const secret = find(objects, 'Secret', source.secretRef.name, namespace);
      for (const key of Object.keys({ ...secret?.data, ...secret?.stringData })) env[key] = secretValue(secret, key) ?? '';
    }
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = String(variable.value);
    else if (variable.valueFrom?.configMapKeyRef !== undefined) {
      const { name, key } = variable.valueFrom.configMapKeyRef;
      env[variable.name] = find(objects, 'ConfigMap', name, namespace)?.data?.[key] ?? '';
    } else if (variable.valueFrom?.secretKeyRef !== undefined) {
      const { name, key } = variable.valueFrom.secretKeyRef;
      const secret = find(objects, 'Secret', name, namespace);
      env[variable.name] = secret === undefined ? `<secret ${name}/${key}>` : (secretValue(secret, key) ?? '');
    } else {
      env[variable.name] = '';
    }
  }
  return env;
}

/** Our two services' containers, with their workload. */
function serviceContainers(objects: readonly KubeObject[]): { workload: Workload; container: any; facts: ServiceFacts }[] {
  return workloads(objects).flatMap((workload) =>
    (workload.pod.containers ?? [])
      .filter((container: any) => SERVICES[container.name] !== undefined)
      .map((container: any) => ({ workload, container, facts: SERVICES[container.name]! })),
  );
}

/** Services, PodDisruptionBudgets and NetworkPolicies select pods; HPAs name a workload. */
export function checkSelectors(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const all = workloads(objects);
  const selected = (namespace: string, selector: Selector) => all.filter((w) => w.namespace === namespace && selects(selector, w.labels));
  for (const object of objects as any[]) {
    const where = `${object.kind}/${object.metadata.name}`;
    const namespace = namespaceOf(object);
    if (object.kind === 'Service' && object.spec?.selector !== undefined) {
      if (selected(namespace, { matchLabels: object.spec.selector }).length === 0) problems.push(`${where}: its selector matches no pod template`);
    }
    if (object.kind === 'PodDisruptionBudget' || object.kind === 'NetworkPolicy') {
      const selector = object.kind === 'NetworkPolicy' ? object.spec.podSelector : object.spec.selector;
      const isAll = Object.keys(selector?.matchLabels ?? {}).length === 0 && (selector?.matchExpressions ?? []).length === 0;
      if (!isAll && selected(namespace, selector).length === 0) problems.push(`${where}: its selector matches no pod template`);
    }
    if (object.kind === 'HorizontalPodAutoscaler') {
      const target = object.spec.scaleTargetRef;
      if (!all.some((w) => w.kind === target.kind && w.name === target.name && w.namespace === namespace)) {
        problems.push(`${where}: scales ${target.kind}/${target.name}, which does not exist`);
      }
    }
    if (object.kind === 'Deployment' || object.kind === 'StatefulSet') {
      if (!selects(object.spec.selector, object.spec.template.metadata?.labels ?? {})) problems.push(`${where}: its selector does not match its own pods`);
    }
  }
  return problems;
}

/**
 * Service target ports, probe ports, NetworkPolicy ports and Ingress backends resolve; and the
 * services' container ports are the ports their settings make them listen on.
 */
export function checkPorts(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const all = workloads(objects);
  for (const object of objects as any[]) {
    const where = `${object.kind}/${object.metadata.name}`;
    const namespace = namespaceOf(object);
    if (object.kind === 'Service' && object.spec?.selector !== undefined) {
      for (const workload of all.filter((w) => w.namespace === namespace && selects({ matchLabels: object.spec.selector }, w.labels))) {
        for (const port of object.spec.ports ?? []) {
          if (resolvePort(workload.pod, port.targetPort ?? port.port) === undefined) {
            problems.push(`${where}: targetPort ${port.targetPort ?? port.port} is not a port of ${workload.kind}/${workload.name}`);
          }
        }
      }
    }
    if (object.kind === 'NetworkPolicy') {
      for (const workload of all.filter((w) => w.namespace === namespace && selects(object.spec.podSelector, w.labels))) {
        for (const rule of object.spec.ingress ?? []) {
          for (const port of rule.ports ?? []) {
            if (resolvePort(workload.pod, port.port) === undefined) problems.push(`${where}: port ${port.port} is not a port of ${workload.kind}/${workload.name}`);
          }
        }
      }
    }
    if (object.kind === 'Ingress') {
      for (const path of (object.spec.rules ?? []).flatMap((rule: any) => rule.http?.paths ?? [])) {
        const { name, port } = path.backend.service;
        const service = find(objects, 'Service', name, namespace);
        if (service === undefined) problems.push(`${where}: backend Service ${name} does not exist`);
        else if (!service.spec.ports.some((p: any) => p.name === port.name || p.port === port.number)) {
          problems.push(`${where}: backend port ${port.name ?? port.number} is not a port of Service ${name}`);
        }
      }
    }
  }
  for (const workload of all) {
    for (const container of workload.pod.containers ?? []) {
      for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        const probe = container[kind];
        const port = probe?.httpGet?.port ?? probe?.tcpSocket?.port ?? probe?.grpc?.port;
        // An exec probe names no port: the command inside the container checks what it checks.
        if (probe !== undefined && probe.exec === undefined && resolvePort(workload.pod, port, container) === undefined) {
          problems.push(`${workload.kind}/${workload.name}: ${container.name} ${kind} port ${port} is not a port of the container`);
        }
      }
    }
  }
  for (const { workload, container, facts } of serviceContainers(objects)) {
    const settings = facts.parse(containerEnvironment(objects, workload.namespace, container));
    for (const [name, setting] of Object.entries(facts.portNames)) {
      const declared = resolvePort(workload.pod, name, container);
      if (declared !== settings[setting]) {
        problems.push(`${workload.kind}/${workload.name}: container port ${name} is ${declared}, but ${container.name} listens on ${settings[setting]}`);
      }
    }
  }
  return problems;
}

/** Every variable set is one the service reads, every required one is set, and all parse. */
export function checkEnvironment(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  for (const { workload, container, facts } of serviceContainers(objects)) {
    const where = `${workload.kind}/${workload.name}`;
    const env = containerEnvironment(objects, workload.namespace, container);
    for (const name of Object.keys(env)) {
      if (!facts.variables.includes(name)) problems.push(`${where}: ${name} is set, but ${container.name} does not read it`);
    }
    for (const name of facts.required) {
      if (typeof name === 'string') {
        if (env[name] === undefined) problems.push(`${where}: ${name} is not set, and its default is not safe in a cluster`);
      } else if (!name.some((alternative) => (env[alternative] ?? '') !== '')) {
        problems.push(`${where}: none of ${name.join(', ')} is set, and the default is not safe in a cluster`);
      }
    }
    try {
      facts.parse(env);
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}`);
    }
  }
  return problems;
}

/**
 * ConfigMaps, Secrets (and their keys) and ServiceAccounts that pods reference exist in the
 * render; `external` names Secrets created outside git, which must not be rendered.
 */
export function checkReferences(objects: readonly KubeObject[], external: readonly string[] = []): string[] {
  const problems: string[] = [];
  for (const workload of workloads(objects)) {
    const where = `${workload.kind}/${workload.name}`;
    const need = (kind: 'ConfigMap' | 'Secret', name: string, key?: string) => {
      const object = find(objects, kind, name, workload.namespace);
      if (object === undefined) {
        if (kind === 'Secret' && external.includes(name)) return;
        problems.push(`${where}: ${kind} ${name} does not exist`);
      } else if (kind === 'Secret' && external.includes(name)) {
        problems.push(`${where}: Secret ${name} is created outside git, but the manifests render one`);
      } else if (key !== undefined && object.data?.[key] === undefined && object.stringData?.[key] === undefined) {
        problems.push(`${where}: ${kind} ${name} has no key ${key}`);
      }
    };
    for (const container of [...(workload.pod.containers ?? []), ...(workload.pod.initContainers ?? [])]) {
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef !== undefined) need('ConfigMap', source.configMapRef.name);
        if (source.secretRef !== undefined) need('Secret', source.secretRef.name);
      }
      for (const variable of container.env ?? []) {
        if (variable.valueFrom?.configMapKeyRef !== undefined) need('ConfigMap', variable.valueFrom.configMapKeyRef.name, variable.valueFrom.configMapKeyRef.key);
        if (variable.valueFrom?.secretKeyRef !== undefined) need('Secret', variable.valueFrom.secretKeyRef.name, variable.valueFrom.secretKeyRef.key);
      }
      for (const mount of container.volumeMounts ?? []) {
        if (!(workload.pod.volumes ?? []).some((volume: any) => volume.name === mount.name) && !(workload.object.spec.volumeClaimTemplates ?? []).some((claim: any) => claim.metadata.name === mount.name)) {
          problems.push(`${where}: ${container.name} mounts volume ${mount.name}, which the pod does not define`);
        }
      }
    }
    for (const volume of workload.pod.volumes ?? []) {
      if (volume.configMap !== undefined) need('ConfigMap', volume.configMap.name);
      if (volume.secret !== undefined) need('Secret', volume.secret.secretName);
      for (const item of volume.secret?.items ?? []) need('Secret', volume.secret.secretName, item.key);
    }
    const account = workload.pod.serviceAccountName;
    if (account !== undefined && account !== 'default' && find(objects, 'ServiceAccount', account, workload.namespace) === undefined) {
      problems.push(`${where}: ServiceAccount ${account} does not exist`);
    }
  }
  return problems;
}

/** A pod that might try to connect, for {@link allowed}. */
export interface Peer {
  readonly namespace: string;
  readonly namespaceLabels?: Labels;
  readonly labels: Labels;
}

/**
 * Whether the NetworkPolicies admit a connection from `from` to the pods of `to` on a port (name
 * or number), as Kubernetes evaluates ingress policies: allowed when no policy selects the target,
 * or when a rule of a policy that selects it admits the peer and the port.
 */
export function allowed(objects: readonly KubeObject[], from: Peer, to: Workload, port: string | number): boolean {
  const portNumber = typeof port === 'number' ? port : resolvePort(to.pod, port);
  const policies = (objects as any[]).filter(
    (object) => object.kind === 'NetworkPolicy' && namespaceOf(object) === to.namespace && selects(object.spec.podSelector, to.labels) && (object.spec.policyTypes ?? ['Ingress']).includes('Ingress'),
  );
  if (policies.length === 0) return true;
  const namespaceLabels = { 'kubernetes.io/metadata.name': from.namespace, ...from.namespaceLabels };
  return policies.some((policy) =>
    (policy.spec.ingress ?? []).some((rule: any) => {
      const peerMatches =
        rule.from === undefined ||
        rule.from.some((peer: any) => {
          const namespaceOk = peer.namespaceSelector === undefined ? from.namespace === to.namespace : selects(peer.namespaceSelector, namespaceLabels);
          const podOk = peer.podSelector === undefined || selects(peer.podSelector, from.labels);
          return peer.ipBlock === undefined && namespaceOk && podOk;
        });
      const portMatches = rule.ports === undefined || rule.ports.some((p: any) => (typeof p.port === 'number' ? p.port : resolvePort(to.pod, p.port)) === portNumber);
      return peerMatches && portMatches;
    }),
  );
}

/** The client pod label that admits a pod to the pet service's gRPC port. */
export const INTERNAL_CLIENT_LABEL: Labels = { 'petstore.example.com/pet-service-client': 'true' };

/** Who may reach what: the NetworkPolicy intent of deploy/, evaluated on the rendered policies. */
export function checkNetworkPolicies(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const all = workloads(objects);
  const named = (name: string) => all.find((w) => w.name === name);
  const [gateway, petService, mongodb, redis] = ['gateway', 'pet-service', 'mongodb', 'redis'].map(named);
  if (!gateway || !petService || !mongodb || !redis) return ['the gateway, pet-service, mongodb and redis workloads must all exist'];
  const namespace = gateway.namespace;
  const pod = (w: Workload): Peer => ({ namespace: w.namespace, labels: w.labels });
  const stranger: Peer = { namespace, labels: { app: 'something-else' } };
  const internalClient: Peer = { namespace, labels: { app: 'report-job', ...INTERNAL_CLIENT_LABEL } };
  const prometheus: Peer = { namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'prometheus' } };
  const ingress: Peer = { namespace: 'ingress-nginx', labels: { 'app.kubernetes.io/name': 'ingress-nginx' } };
  const expectations: [string, Peer, Workload, string, boolean][] = [
    ['the gateway', pod(gateway), petService, 'grpc', true],
    ['an internal client', internalClient, petService, 'grpc', true],
    ['an unlabelled pod', stranger, petService, 'grpc', false],
    ['redis', pod(redis), petService, 'grpc', false],
    ['the pet service', pod(petService), mongodb, 'mongodb', true],
    ['a MongoDB member', pod(mongodb), mongodb, 'mongodb', true],
    ['the gateway', pod(gateway), mongodb, 'mongodb', false],
    ['an unlabelled pod', stranger, mongodb, 'mongodb', false],
    ['the gateway', pod(gateway), redis, 'redis', true],
    ['the pet service', pod(petService), redis, 'redis', false],
    ['an unlabelled pod', stranger, redis, 'redis', false],
    ['the ingress controller', ingress, gateway, 'http', true],
    ['an unlabelled pod', stranger, gateway, 'http', false],
    ['Prometheus', prometheus, gateway, 'admin', true],
    ['Prometheus', prometheus, petService, 'admin', true],
    ['an unlabelled pod', stranger, gateway, 'admin', false],
    ['an unlabelled pod', stranger, petService, 'admin', false],
    ['the ingress controller', ingress, gateway, 'admin', false],
  ];
  if ((redis.pod.containers ?? []).some((c: any) => (c.ports ?? []).some((p: any) => p.name === 'sentinel'))) {
    expectations.push(
      ['the gateway', pod(gateway), redis, 'sentinel', true],
      ['a Redis member', pod(redis), redis, 'redis', true],
      ['a Redis member', pod(redis), redis, 'sentinel', true],
      ['the pet service', pod(petService), redis, 'sentinel', false],
      ['an unlabelled pod', stranger, redis, 'sentinel', false],
    );
  }
  for (const [who, from, to, port, expected] of expectations) {
    if (allowed(objects, from, to, port) !== expected) {
      problems.push(`${who} ${expected ? 'cannot' : 'can'} reach ${to.name}'s ${port} port`);
    }
  }
  return problems;
}

/** No Service exposes an admin port, and so no Ingress can route to one. */
export function checkAdminPortsHidden(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  for (const { workload, container, facts } of serviceContainers(objects)) {
    const adminPort = facts.parse(containerEnvironment(objects, workload.namespace, container)).adminPort;
    for (const service of (objects as any[]).filter((o) => o.kind === 'Service' && namespaceOf(o) === workload.namespace && selects({ matchLabels: o.spec.selector }, workload.labels))) {
      for (const port of service.spec.ports ?? []) {
        if (resolvePort(workload.pod, port.targetPort ?? port.port, container) === adminPort) {
          problems.push(`Service/${service.metadata.name}: exposes ${container.name}'s admin port ${adminPort}`);
        }
      }
    }
  }
  return problems;
}

/** The drain pause a container gets after SIGTERM is sent or before: preStop sleep, in ms. */
function preStopMs(container: any): number {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep?.seconds !== undefined) return Number(preStop.sleep.seconds) * 1000;
  const command: string[] = preStop?.exec?.command ?? [];
  const sleep = command.join(' ').match(/\bsleep\s+(\d+)/);
  return sleep === null ? 0 : Number(sleep[1]) * 1000;
}

/** Shortest pause in which endpoints and the ingress drop a terminating pod. */
export const MIN_DRAIN_PAUSE_MS = 3000;

/** How long CoreDNS (its kubernetes plugin's default TTL) may answer with an address list gone stale. */
export const CLUSTER_DNS_TTL_MS = 5000;

/**
 * The services pause (SHUTDOWN_DELAY_MS and any preStop sleep) so endpoints drain before they stop
 * accepting, and the grace period exceeds that pause plus SHUTDOWN_TIMEOUT_MS.
 */
export function checkShutdown(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  for (const { workload, container, facts } of serviceContainers(objects)) {
    const where = `${workload.kind}/${workload.name}`;
    const settings = facts.parse(containerEnvironment(objects, workload.namespace, container));
    const pause = settings.shutdownDelayMs + preStopMs(container);
    const graceMs = Number(workload.pod.terminationGracePeriodSeconds ?? 30) * 1000;
    const needed = pause + settings.shutdownTimeoutMs;
    if (pause < MIN_DRAIN_PAUSE_MS) problems.push(`${where}: drain pause ${pause} ms (SHUTDOWN_DELAY_MS + preStop) is under ${MIN_DRAIN_PAUSE_MS} ms`);
    // A gateway that knows no other pet service replica may resolve the name again only after its
    // resolution interval, and DNS may still be stale for its TTL: this one must serve until then.
    const resolvable = MIN_RESOLUTION_INTERVAL_MS + CLUSTER_DNS_TTL_MS;
    if (workload.name === 'pet-service' && pause < resolvable) {
      problems.push(`${where}: drain pause ${pause} ms is under the gateways' resolution interval plus the DNS TTL, ${resolvable} ms`);
    }
    if (!(graceMs > needed)) {
      problems.push(`${where}: terminationGracePeriodSeconds ${graceMs / 1000} s does not exceed SHUTDOWN_DELAY_MS + preStop + SHUTDOWN_TIMEOUT_MS = ${needed} ms`);
    }
  }
  return problems;
}

const MI = 1024 * 1024;
const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: MI, Gi: 1024 * MI };

/** A memory quantity in bytes. */
export function bytes(quantity: string | number): number {
  const match = String(quantity).match(/^([0-9.]+)([A-Za-z]*)$/);
  if (match === null || UNITS[match[2]!] === undefined) throw new Error(`unsupported quantity ${quantity}`);
  return Number(match[1]) * UNITS[match[2]!]!;
}

/**
 * Memory outside the V8 heap: Node's own code pages, the compilers' and native memory, stacks and
 * buffers; RSS under load less the heap in use (docs/performance.md, Memory).
 */
export const NON_HEAP_MB = 106;

/**
 * Every container is non-root, read-only, capability-free and without privilege escalation, with
 * requests and limits; the services' memory fits their heap flags: at least the heap (old space +
 * 3 semi-spaces) plus {@link NON_HEAP_MB}, at most twice that, and requested in full.
 */
export function checkContainers(objects: readonly KubeObject[], heap: Record<string, { oldSpaceMb: number; semiSpaceMb: number }>): string[] {
  const problems: string[] = [];
  for (const workload of workloads(objects)) {
    for (const container of [...(workload.pod.containers ?? []), ...(workload.pod.initContainers ?? [])]) {
      const where = `${workload.kind}/${workload.name} ${container.name}`;
      const pod = workload.pod.securityContext ?? {};
      const own = container.securityContext ?? {};
      const runAsUser = own.runAsUser ?? pod.runAsUser;
      if ((own.runAsNonRoot ?? pod.runAsNonRoot) !== true) problems.push(`${where}: runAsNonRoot is not true`);
      if (runAsUser === 0) problems.push(`${where}: runs as uid 0`);
      if (own.readOnlyRootFilesystem !== true) problems.push(`${where}: root filesystem is writable`);
      if (own.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation is not false`);
      if (!(own.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: capabilities are not all dropped`);
      if ((own.capabilities?.add ?? []).length > 0) problems.push(`${where}: adds capabilities`);
      for (const kind of ['requests', 'limits']) {
        for (const resource of ['cpu', 'memory']) {
          if (container.resources?.[kind]?.[resource] === undefined) problems.push(`${where}: no ${resource} ${kind.replace(/s$/, '')}`);
        }
      }
      const flags = heap[container.name];
      if (flags !== undefined && container.resources?.limits?.memory !== undefined) {
        const heapMb = flags.oldSpaceMb + 3 * flags.semiSpaceMb;
        const limitMb = bytes(container.resources.limits.memory) / MI;
        const requestMb = bytes(container.resources.requests?.memory ?? 0) / MI;
        if (limitMb < heapMb + NON_HEAP_MB) problems.push(`${where}: memory limit ${limitMb} Mi is below heap ${heapMb} Mi + ${NON_HEAP_MB} Mi`);
        if (limitMb > 2 * (heapMb + NON_HEAP_MB)) problems.push(`${where}: memory limit ${limitMb} Mi is over twice what heap ${heapMb} Mi needs: raise the heap flags instead`);
        if (requestMb !== limitMb) problems.push(`${where}: memory request ${requestMb} Mi differs from the limit ${limitMb} Mi`);
      }
    }
  }
  return problems;
}

/**
 * The addresses in the settings name the in-cluster Services: PET_SERVICE_ADDR the headless pet
 * service (dns:/// for per-call balancing), REDIS_URL the Redis Service, REDIS_SENTINELS every
 * member of the Redis StatefulSet at its Sentinel port and REDIS_SENTINEL_MASTER the name they
 * monitor, MONGODB_URI every member of the MongoDB StatefulSet, all in the pods' own namespace.
 */
export function checkAddresses(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const all = workloads(objects);
  const serviceFor = (workloadName: string, namespace: string) => {
    const workload = all.find((w) => w.name === workloadName && w.namespace === namespace);
    const service = (objects as any[]).find((o) => o.kind === 'Service' && namespaceOf(o) === namespace && workload !== undefined && selects({ matchLabels: o.spec.selector }, workload.labels));
    return { workload, service };
  };
  for (const { workload, container } of serviceContainers(objects)) {
    const where = `${workload.kind}/${workload.name}`;
    const env = containerEnvironment(objects, workload.namespace, container);
    const ns = workload.namespace;
    if (env.PET_SERVICE_ADDR !== undefined) {
      const { service } = serviceFor('pet-service', ns);
      const port = service?.spec.ports?.[0]?.port;
      const wanted = `dns:///${service?.metadata.name}.${ns}.svc.cluster.local:${port}`;
      if (service?.spec.clusterIP !== 'None') problems.push(`${where}: the pet service's Service is not headless, so round_robin would see one address`);
      if (env.PET_SERVICE_ADDR !== wanted) problems.push(`${where}: PET_SERVICE_ADDR is ${env.PET_SERVICE_ADDR}, not ${wanted}`);
    }
    // A REDIS_URL given as a file holds a password, and its Secret is not rendered: the secrets
    // script's test checks its address (deploy/test/make-secrets.test.ts).
    if (env.REDIS_URL !== undefined) {
      const { service } = serviceFor('redis', ns);
      const wanted = `redis://${service?.metadata.name}.${ns}.svc.cluster.local:${service?.spec.ports?.[0]?.port}`;
      if (env.REDIS_URL !== wanted) problems.push(`${where}: REDIS_URL is ${env.REDIS_URL}, not ${wanted}`);
    }
    if ((env.REDIS_SENTINELS ?? '') !== '') {
      const { workload: redis, service } = serviceFor('redis', ns);
      const sentinel = (redis?.pod.containers ?? []).find((c: any) => (c.ports ?? []).some((p: any) => p.name === 'sentinel'));
      const port = service?.spec.ports?.find((p: any) => p.targetPort === 'sentinel')?.port;
      const members = Array.from({ length: Number(redis?.object.spec.replicas ?? 0) }, (_, i) => `redis-${i}.${redis?.object.spec.serviceName}.${ns}.svc.cluster.local:${port}`);
      if (redis?.kind !== 'StatefulSet' || sentinel === undefined) problems.push(`${where}: REDIS_SENTINELS is set, but no Redis StatefulSet runs Sentinels`);
      else if (env.REDIS_SENTINELS !== members.join(',')) problems.push(`${where}: REDIS_SENTINELS ${env.REDIS_SENTINELS} are not the members' Sentinels ${members.join(',')}`);
      const monitored = sentinel?.env?.find((e: any) => e.name === 'MASTER_NAME')?.value;
      if (env.REDIS_SENTINEL_MASTER !== monitored) problems.push(`${where}: REDIS_SENTINEL_MASTER is ${env.REDIS_SENTINEL_MASTER}, but the Sentinels monitor ${monitored}`);
    }
    if (env.MONGODB_URI !== undefined) {
      const { workload: mongodb, service } = serviceFor('mongodb', ns);
      const members = Array.from({ length: Number(mongodb?.object.spec.replicas ?? 0) }, (_, i) => `mongodb-${i}.${mongodb?.object.spec.serviceName}.${ns}.svc.cluster.local:${service?.spec.ports?.[0]?.port}`);
      const hosts = env.MONGODB_URI.replace(/^mongodb:\/\//, '').split('/')[0]!.split(',');
      if (mongodb?.object.spec.serviceName !== service?.metadata.name) problems.push(`${where}: the MongoDB StatefulSet's serviceName is not its Service`);
      if (JSON.stringify(hosts) !== JSON.stringify(members)) problems.push(`${where}: MONGODB_URI hosts ${hosts.join(',')} are not the members ${members.join(',')}`);
      if (!/[?&]replicaSet=rs0\b/.test(env.MONGODB_URI)) problems.push(`${where}: MONGODB_URI does not name the replica set rs0`);
    }
  }
  return problems;
}

/** Where an Ingress routes to the gateway, TRUST_PROXY believes that hop (a hop count or CIDRs). */
export function checkTrustProxy(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const ingresses = (objects as any[]).filter((o) => o.kind === 'Ingress');
  for (const { workload, container } of serviceContainers(objects).filter(({ container }) => container.name === 'gateway')) {
    const routed = ingresses.some((ingress) =>
      (ingress.spec.rules ?? []).some((rule: any) =>
        (rule.http?.paths ?? []).some((path: any) => {
          const service = find(objects, 'Service', path.backend.service.name, namespaceOf(ingress));
          return service !== undefined && selects({ matchLabels: service.spec.selector }, workload.labels);
        }),
      ),
    );
    const trustProxy = parseGatewayConfig(containerEnvironment(objects, workload.namespace, container), '').trustProxy;
    if (routed && (trustProxy === false || trustProxy === true)) {
      problems.push(`${workload.kind}/${workload.name}: behind an Ingress, TRUST_PROXY must name the ingress hop (a count or CIDRs), not ${String(trustProxy)}`);
    }
    if (!routed && trustProxy !== false) problems.push(`${workload.kind}/${workload.name}: no Ingress in front, but TRUST_PROXY is ${String(trustProxy)}`);
  }
  return problems;
}

/** The metric the pet service's autoscaler must scale on besides CPU: the creates' queue. */
const PET_SERVICE_WRITE_QUEUE = 'pet_store_writes_queued';

/**
 * Autoscalers for both services, the pet service's on its write queue too, every Pods metric one
 * the service exports; disruption budgets for both services, for MongoDB and for a replicated Redis.
 */
export function checkAvailability(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  const all = workloads(objects);
  const exported: Record<string, readonly string[]> = {
    'pet-service': createPetServiceMetrics().registry.getMetricsAsArray().map((metric) => metric.name),
  };
  for (const name of ['gateway', 'pet-service']) {
    const autoscaler = (objects as any[]).find((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === name);
    if (autoscaler === undefined) {
      problems.push(`${name}: no HorizontalPodAutoscaler`);
      continue;
    }
    const podMetrics: string[] = (autoscaler.spec.metrics ?? []).filter((m: any) => m.type === 'Pods').map((m: any) => m.pods.metric.name);
    for (const metric of podMetrics) {
      if (!(exported[name] ?? []).includes(metric)) problems.push(`${name}: the autoscaler's metric ${metric} is not one the service exports`);
    }
    if (name === 'pet-service' && !podMetrics.includes(PET_SERVICE_WRITE_QUEUE)) {
      problems.push(`${name}: the autoscaler does not scale on ${PET_SERVICE_WRITE_QUEUE}, which rises under a write burst where CPU does not`);
    }
  }
  // Redis needs one only where it is replicated (production's Sentinel-managed set).
  const replicatedRedis = all.some((w) => w.name === 'redis' && Number(w.object.spec.replicas ?? 1) > 1);
  for (const name of ['gateway', 'pet-service', 'mongodb', ...(replicatedRedis ? ['redis'] : [])]) {
    const workload = all.find((w) => w.name === name);
    if (workload === undefined || !(objects as any[]).some((o) => o.kind === 'PodDisruptionBudget' && selects(o.spec.selector, workload.labels))) {
      problems.push(`${name}: no PodDisruptionBudget`);
    }
  }
  return problems;
}

/** The volume mounted in `container` whose mount path holds `path`, and the file's path within it. */
function mountedFile(pod: any, container: any, path: string): { volume: any; key: string } | undefined {
  const mounts: any[] = (container.volumeMounts ?? []).filter((mount: any) => path.startsWith(`${String(mount.mountPath).replace(/\/$/, '')}/`));
  const mount = mounts.sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  if (mount === undefined) return undefined;
  const volume = (pod.volumes ?? []).find((candidate: any) => candidate.name === mount.name);
  return volume === undefined ? undefined : { volume, key: path.slice(String(mount.mountPath).replace(/\/$/, '').length + 1) };
}

/**
 * Secrets reach the services as files only: no secret setting is a variable (nor any variable
 * from a `secretKeyRef`, which `kubectl describe pod` and `/proc/<pid>/environ` would show), and
 * every `*_FILE` setting, secret or certificate, names a key of a Secret mounted in the container.
 * `external` gives the keys of Secrets created outside git.
 */
export function checkSecretFiles(objects: readonly KubeObject[], external: Readonly<Record<string, readonly string[]>>): string[] {
  const problems: string[] = [];
  for (const { workload, container, facts } of serviceContainers(objects)) {
    const where = `${workload.kind}/${workload.name}`;
    const env = containerEnvironment(objects, workload.namespace, container);
    for (const variable of container.env ?? []) {
      if (variable.valueFrom?.secretKeyRef !== undefined) problems.push(`${where}: ${variable.name} comes from a secretKeyRef; mount the Secret and set ${variable.name}_FILE`);
    }
    for (const name of facts.secrets) {
      if (env[name] !== undefined && env[`${name}_FILE`] === undefined) problems.push(`${where}: ${name} is a variable; give it as a file (${name}_FILE) from a Secret`);
    }
    for (const name of [...facts.secrets.map((secret) => `${secret}_FILE`), ...facts.files]) {
      const path = env[name];
      if (path === undefined || path === '') continue;
      const file = mountedFile(workload.pod, container, path);
      if (file?.volume.secret === undefined) {
        problems.push(`${where}: ${name} ${path} is not in a Secret mounted in ${container.name}`);
        continue;
      }
      const secretName = file.volume.secret.secretName;
      const rendered = find(objects, 'Secret', secretName, workload.namespace);
      const keys = rendered === undefined ? (external[secretName] ?? []) : Object.keys({ ...rendered.data, ...rendered.stringData });
      if (!keys.includes(file.key)) problems.push(`${where}: ${name} ${path}: Secret ${secretName} has no key ${file.key}`);
    }
  }
  return problems;
}

/** The text of the script a container runs as `sh <path>`, from the ConfigMap mounted there. */
function scriptOf(objects: readonly KubeObject[], workload: Workload, container: any): string | undefined {
  const command: string[] = [...(container.command ?? []), ...(container.args ?? [])];
  const path = command[0] === 'sh' ? command[1] : undefined;
  if (path === undefined) return undefined;
  const file = mountedFile(workload.pod, container, path);
  if (file?.volume.configMap === undefined) return undefined;
  return find(objects, 'ConfigMap', file.volume.configMap.name, workload.namespace)?.data?.[file.key];
}

/**
 * Every internal hop authenticates: the pet service requires client certificates and the gateway
 * presents one (their settings, required above); Redis starts with ACL users (an ACL file, and in
 * a replicated set the replicas' `masterauth`), its Sentinels with a password of their own and
 * credentials for the data nodes; MongoDB with a keyfile between members, which turns on
 * authentication.
 */
export function checkAuthentication(objects: readonly KubeObject[]): string[] {
  const problems: string[] = [];
  for (const workload of workloads(objects)) {
    for (const container of workload.pod.containers ?? []) {
      const where = `${workload.kind}/${workload.name} ${container.name}`;
      const ports: string[] = (container.ports ?? []).map((port: any) => port.name);
      const script = scriptOf(objects, workload, container) ?? '';
      const replicated = (workload.pod.containers ?? []).some((other: any) => other.name === 'sentinel');
      if (workload.name === 'redis' && ports.includes('redis')) {
        if (!script.includes('--aclfile')) problems.push(`${where}: Redis does not start with an ACL file (no user, no password)`);
        if (!script.includes('redis-acl.sh')) problems.push(`${where}: Redis's ACL file is not written by redis-acl.sh`);
        if (replicated && !script.includes('masterauth')) problems.push(`${where}: the replicas do not authenticate to the master (masterauth)`);
      }
      if (ports.includes('sentinel')) {
        if (!script.includes('requirepass')) problems.push(`${where}: the Sentinel requires no password`);
        if (!script.includes('sentinel auth-pass')) problems.push(`${where}: the Sentinel has no credentials for the data nodes (sentinel auth-pass)`);
      }
      if (workload.name === 'mongodb' && ports.includes('mongodb')) {
        const args: string[] = container.args ?? [];
        if (!args.some((arg) => arg.startsWith('--keyFile=') || arg === '--auth')) problems.push(`${where}: MongoDB runs without authentication (no --keyFile)`);
      }
    }
  }
  return problems;
}
