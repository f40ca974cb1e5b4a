import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Context } from 'mocha';
import { pendingOrRequired } from '../../../system-test/support/executables';

/** Where deploy/e2e/cluster.sh keeps what `up` started (PETSTORE_E2E_RUN overrides it, as there). */
const RUN_DIR = process.env.PETSTORE_E2E_RUN ?? '/run/petstore-e2e';
const STATE_DIR = process.env.PETSTORE_E2E_STATE ?? '/var/lib/petstore-e2e';

export const ROOT = join(__dirname, '..', '..', '..');

/** The cluster that `cluster.sh up` started: its kubectl (v1.34, built with it) and kubeconfig. */
export interface Cluster {
  readonly kubectl: string;
  readonly env: NodeJS.ProcessEnv;
}

let cluster: Cluster | undefined;

/**
 * The running cluster, or the suite pending with the reason (failing under REQUIRE_KUBERNETES=1,
 * as CI sets it): no cluster is up unless deploy/e2e/run.sh (or cluster.sh up) started one.
 */
export function clusterOrPending(context: Context): Cluster {
  if (cluster !== undefined) return cluster;
  const binFile = join(RUN_DIR, 'bin');
  if (!existsSync(binFile)) {
    pendingOrRequired(context, 'REQUIRE_KUBERNETES', `no cluster is up (${binFile} is missing: run deploy/e2e/run.sh, or deploy/e2e/cluster.sh up)`);
  }
  const bin = readFileSync(binFile, 'utf8').trim();
  cluster = {
    kubectl: join(bin, 'kubectl'),
    // The cluster's kubectl first on PATH, for the documented steps run as written.
    env: { ...process.env, KUBECONFIG: join(STATE_DIR, 'pki', 'admin.kubeconfig'), PATH: `${bin}:${process.env.PATH ?? ''}` },
  };
  return cluster;
}

function current(): Cluster {
  if (cluster === undefined) throw new Error('clusterOrPending() first');
  return cluster;
}

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program with the cluster's environment; resolves whatever its exit code. */
export function run(command: string, args: readonly string[], options: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { env: current().env, cwd: options.cwd ?? ROOT, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 300_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/** `kubectl ARGS`, whatever its exit code. */
export function tryKubectl(args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<Ran> {
  return run(current().kubectl, args, options);
}

/** `kubectl ARGS`; rejects with its stderr unless it exits 0. */
export async function kubectl(args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  const ran = await tryKubectl(args, options);
  if (ran.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${ran.code}: ${ran.stderr.trim()}`);
  return ran.stdout;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects as the API returns them */
export async function kubectlJson(args: readonly string[]): Promise<any> {
  return JSON.parse(await kubectl([...args, '-o', 'json']));
}

export interface PodInfo {
  readonly name: string;
  readonly ip: string;
  readonly ready: boolean;
  readonly phase: string;
  readonly uid: string;
  readonly restarts: number;
  readonly labels: Record<string, string>;
}

export async function pods(namespace: string, selector?: string): Promise<PodInfo[]> {
  const list = await kubectlJson(['-n', namespace, 'get', 'pods', ...(selector === undefined ? [] : ['-l', selector])]);
  return list.items
    .filter((pod: any) => pod.metadata.deletionTimestamp === undefined)
    .map((pod: any) => ({
      name: pod.metadata.name,
      ip: pod.status.podIP ?? '',
      phase: pod.status.phase,
      uid: pod.metadata.uid,
      labels: pod.metadata.labels ?? {},
      ready: (pod.status.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
      restarts: (pod.status.containerStatuses ?? []).reduce((sum: number, c: any) => sum + c.restartCount, 0),
    }));
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export async function serviceUrl(namespace: string, service: string): Promise<string> {
  const ip = (await kubectl(['-n', namespace, 'get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  return `http://${ip}`;
}

/** Runs a bash script with the cluster's kubectl first on PATH; rejects with its output unless it exits 0. */
export async function bash(script: string, options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: options.cwd ?? ROOT, env: { ...current().env, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs ?? 600_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ code, stdout, stderr });
      else reject(new Error(`script exited ${code}:\n${script}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
    });
  });
}

/** A figure the closing note of a change quotes: printed on its own line, easy to grep. */
export function figure(name: string, value: string | number): void {
  console.log(`      [figure] ${name}: ${value}`);
}
