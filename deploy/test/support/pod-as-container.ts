import type { KubeObject } from './kubectl';
import { containerEnvironment, selects, workloads } from './wiring';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are walked field by field */

/** A Deployment's container as `podman run` runs it: the arguments, and what the test reaches it by. */
export interface ContainerPlan {
  /** `podman run` arguments after `run`, image last. */
  readonly args: readonly string[];
  /** Every containerPort, by its name (published on a loopback port of the host). */
  readonly ports: Readonly<Record<string, number>>;
  readonly readinessProbe: any;
  /** The pod's terminationGracePeriodSeconds: how long a stop may take before SIGKILL. */
  readonly gracePeriodSeconds: number;
  readonly user: { uid: number; gid: number };
  readonly env: Readonly<Record<string, string>>;
}

export interface ContainerOptions {
  readonly image: string;
  readonly name: string;
  readonly network: string;
  /**
   * A host directory laid out as the kubelet lays out a Secret's or a ConfigMap's volume
   * (SecretVolume), mounted read-only as the kubelet mounts both.
   */
  readonly volumeDirectory: (kind: 'Secret' | 'ConfigMap', name: string) => string;
}

// Fields the translation honours, and fields that only place a pod (nothing to run for them).
const POD_FIELDS = new Set(['containers', 'securityContext', 'volumes', 'terminationGracePeriodSeconds', 'serviceAccountName', 'automountServiceAccountToken']);
const SCHEDULING_FIELDS = new Set(['affinity', 'topologySpreadConstraints', 'nodeSelector', 'tolerations', 'priorityClassName']);
const POD_SECURITY_FIELDS = new Set(['runAsNonRoot', 'runAsUser', 'runAsGroup', 'seccompProfile']);
const CONTAINER_FIELDS = new Set(['name', 'image', 'imagePullPolicy', 'command', 'args', 'ports', 'envFrom', 'env', 'volumeMounts', 'livenessProbe', 'readinessProbe', 'startupProbe', 'resources', 'securityContext']);
const CONTAINER_SECURITY_FIELDS = new Set(['allowPrivilegeEscalation', 'readOnlyRootFilesystem', 'runAsNonRoot', 'runAsUser', 'runAsGroup', 'capabilities', 'seccompProfile']);

function refuseUnknown(where: string, object: object | undefined, known: ReadonlySet<string>, ignored: ReadonlySet<string> = new Set()): void {
  for (const field of Object.keys(object ?? {})) {
    if (!known.has(field) && !ignored.has(field)) throw new Error(`${where}.${field}: the container suite does not know how to run it; teach pod-as-container.ts`);
  }
}

/**
 * The `podman run` arguments that run the one container of Deployment `deployment` as its pod
 * would run: its command and arguments, user, read-only root filesystem (and no tmpfs podman
 * would add), capabilities, no privilege escalation, the default seccomp profile, memory and CPU
 * limits, the environment its ConfigMaps and Secrets give it, Secret and ConfigMap volumes as
 * kubelet-style directories mounted read-only and emptyDir volumes as tmpfs (mode 0777, as the
 * kubelet makes an emptyDir), and a network alias for every Service name that selects it
 * (`<service>`, `<service>.<namespace>.svc.cluster.local`). A field it cannot reproduce fails the
 * translation rather than being left out.
 */
export function podAsContainer(objects: readonly KubeObject[], deployment: string, options: ContainerOptions): ContainerPlan {
  const workload = workloads(objects).find((candidate) => candidate.kind === 'Deployment' && candidate.name === deployment);
  if (workload === undefined) throw new Error(`no Deployment ${deployment}`);
  const { namespace, pod } = workload;
  refuseUnknown(`${deployment} pod spec`, pod, POD_FIELDS, SCHEDULING_FIELDS);
  refuseUnknown(`${deployment} pod securityContext`, pod.securityContext, POD_SECURITY_FIELDS);
  if (pod.containers.length !== 1) throw new Error(`${deployment}: one container expected, found ${pod.containers.length}`);
  const container = pod.containers[0];
  refuseUnknown(`${deployment} container`, container, CONTAINER_FIELDS);
  refuseUnknown(`${deployment} container securityContext`, container.securityContext, CONTAINER_SECURITY_FIELDS);

  const security = { ...pod.securityContext, ...container.securityContext };
  const args = ['--name', options.name, '--network', options.network, '--stop-timeout', String(pod.terminationGracePeriodSeconds ?? 30)];
  for (const service of objects.filter((object) => object.kind === 'Service') as any[]) {
    if (service.spec.selector !== undefined && (service.metadata.namespace ?? 'default') === namespace && selects({ matchLabels: service.spec.selector }, workload.labels)) {
      args.push('--network-alias', service.metadata.name, '--network-alias', `${service.metadata.name}.${namespace}.svc.cluster.local`);
    }
  }
  if (security.runAsUser === undefined || security.runAsGroup === undefined) throw new Error(`${deployment}: runAsUser and runAsGroup expected`);
  const user = { uid: Number(security.runAsUser), gid: Number(security.runAsGroup) };
  args.push('--user', `${user.uid}:${user.gid}`);
  if (security.seccompProfile !== undefined && security.seccompProfile.type !== 'RuntimeDefault') {
    throw new Error(`${deployment}: seccomp profile ${security.seccompProfile.type} is not podman's default`);
  }
  if (security.readOnlyRootFilesystem === true) args.push('--read-only', '--read-only-tmpfs=false');
  if (security.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
  for (const capability of security.capabilities?.drop ?? []) args.push('--cap-drop', capability);
  for (const capability of security.capabilities?.add ?? []) args.push('--cap-add', capability);

  const limits = container.resources?.limits ?? {};
  if (limits.memory !== undefined) args.push('--memory', podmanMemory(String(limits.memory)));
  if (limits.cpu !== undefined) args.push('--cpus', String(cpus(String(limits.cpu))));

  const env = containerEnvironment(objects, namespace, container);
  for (const [name, value] of Object.entries(env)) args.push('--env', `${name}=${value}`);

  const volumes = new Map<string, any>((pod.volumes ?? []).map((volume: any) => [volume.name, volume]));
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (volume?.secret !== undefined) {
      args.push('--volume', `${options.volumeDirectory('Secret', volume.secret.secretName)}:${mount.mountPath}:ro`);
    } else if (volume?.configMap !== undefined) {
      args.push('--volume', `${options.volumeDirectory('ConfigMap', volume.configMap.name)}:${mount.mountPath}:ro`);
    } else if (volume?.emptyDir !== undefined) {
      const size = volume.emptyDir.sizeLimit === undefined ? '' : `,size=${podmanMemory(String(volume.emptyDir.sizeLimit))}`;
      args.push('--tmpfs', `${mount.mountPath}:rw,nosuid,nodev,mode=0777${size}`);
    } else {
      throw new Error(`${deployment}: volume ${mount.name} is neither a Secret, a ConfigMap nor an emptyDir; teach pod-as-container.ts`);
    }
  }

  const ports: Record<string, number> = {};
  for (const port of container.ports ?? []) {
    ports[port.name ?? String(port.containerPort)] = port.containerPort;
    args.push('--publish', `127.0.0.1::${port.containerPort}`);
  }
  // A command replaces the image's entry point, and its arguments its CMD (as in Kubernetes).
  if (container.command !== undefined) args.push('--entrypoint', JSON.stringify(container.command));
  args.push(options.image, ...(container.args ?? []));
  return { args, ports, readinessProbe: container.readinessProbe, gracePeriodSeconds: pod.terminationGracePeriodSeconds ?? 30, user, env };
}

/** A Kubernetes quantity of bytes as podman's `--memory` takes it (binary units). */
function podmanMemory(quantity: string): string {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (match === null) throw new Error(`memory quantity ${quantity}: use Ki, Mi or Gi`);
  return `${match[1]}${{ Ki: 'k', Mi: 'm', Gi: 'g' }[match[2] as 'Ki' | 'Mi' | 'Gi'] ?? 'b'}`;
}

/** A Kubernetes CPU quantity (`1`, `500m`) in CPUs. */
function cpus(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}
