import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'mocha';
import { stringify } from 'yaml';
import { findExecutable, pendingOrRequired } from './executables';
import { freePort } from './redis-server';
import { stopChild } from './service-process';
import { waitFor } from './wait-for';

const MISSING = 'install Debian package prometheus';

/** Debian's promtool, or the suite pending (failing under REQUIRE_PROMETHEUS=1) where it is missing. */
export function promtoolOrSkip(context: Context): string {
  return findExecutable('PROMTOOL_BIN', 'promtool', '/usr/bin/promtool') ?? pendingOrRequired(context, 'REQUIRE_PROMETHEUS', `promtool not found (${MISSING}, or set PROMTOOL_BIN)`);
}

export interface PrometheusOptions {
  /** `scrape_configs` as Prometheus's configuration file has them. */
  readonly scrapeConfigs: readonly object[];
  /** Rules files (or globs), loaded as they are. */
  readonly ruleFiles: readonly string[];
  /** Scrape and rule evaluation interval; default 1s. */
  readonly interval?: string;
}

/** One sample of a query's answer: labels, then time (Unix seconds) and value. */
export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}

/** A range vector's series: labels and every sample in the range. */
export interface Series {
  readonly metric: Record<string, string>;
  readonly values: ReadonlyArray<readonly [number, string]>;
}

export interface Alert {
  readonly labels: Record<string, string>;
  readonly state: 'pending' | 'firing';
}

export interface RuleGroupState {
  readonly name: string;
  /** When the group was last evaluated (RFC 3339). */
  readonly lastEvaluation: string;
  readonly rules: ReadonlyArray<{ readonly name: string; readonly health: string; readonly lastError?: string }>;
}

export interface TargetState {
  readonly labels: Record<string, string>;
  readonly health: string;
  /** When it was last scraped (RFC 3339). */
  readonly lastScrape: string;
}

/** A private Prometheus server on a loopback port, with a storage directory of its own. */
export interface PrometheusServer {
  readonly url: string;
  readonly pid: number;
  /** An instant query, at `time` (Unix seconds) or now; rejects on any error Prometheus reports. */
  query(expr: string, time?: number): Promise<Sample[]>;
  /** A query whose answer is a range vector (`expr` ends in `[…]`), at `time` or now. */
  queryRange(expr: string, time?: number): Promise<Series[]>;
  alerts(): Promise<Alert[]>;
  ruleGroups(): Promise<RuleGroupState[]>;
  targets(): Promise<TargetState[]>;
  /** Stops it (SIGTERM to its PID), then deletes its configuration and storage. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;

/**
 * Starts Debian's `prometheus` scraping `options.jobs` and evaluating `options.ruleFiles`, or marks
 * the suite pending where it is missing (failing instead under REQUIRE_PROMETHEUS=1, as in CI).
 */
export function startPrometheusOrSkip(context: Context, options: PrometheusOptions): Promise<PrometheusServer> {
  const binary = findExecutable('PROMETHEUS_BIN', 'prometheus', '/usr/bin/prometheus') ?? pendingOrRequired(context, 'REQUIRE_PROMETHEUS', `prometheus not found (${MISSING}, or set PROMETHEUS_BIN)`);
  return startPrometheus(binary, options);
}

export async function startPrometheus(binary: string, options: PrometheusOptions): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  const interval = options.interval ?? '1s';
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      rule_files: options.ruleFiles,
      scrape_configs: options.scrapeConfigs,
    }),
  );
  let lastError: unknown;
  // The free port is found by binding and releasing it; another process could take it meanwhile.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    try {
      const child = await launch(binary, dir, port);
      return server(child, `http://127.0.0.1:${port}`, dir);
    } catch (error) {
      lastError = error;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

async function launch(binary: string, dir: string, port: number): Promise<ChildProcess> {
  const child = spawn(
    binary,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  try {
    await waitFor(
      async () => {
        if (exited()) throw new Error(`prometheus exited (${child.exitCode}): ${stderr}`);
        return (await fetch(`http://127.0.0.1:${port}/-/ready`).catch(() => undefined))?.status === 200;
      },
      READY_TIMEOUT_MS,
      () => stderr,
    );
  } catch (error) {
    await stopChild(child, 'SIGKILL');
    throw error;
  }
  return child;
}

function server(child: ChildProcess, url: string, dir: string): PrometheusServer {
  const api = async <T>(path: string, params: Record<string, string | number | undefined> = {}): Promise<T> => {
    const query = new URLSearchParams(Object.entries(params).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]])));
    const response = await fetch(`${url}/api/v1/${path}?${query}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path} ${JSON.stringify(params)}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    pid: child.pid!,
    query: async (expr, time) => (await api<{ result: Sample[] }>('query', { query: expr, time })).result,
    queryRange: async (expr, time) => (await api<{ result: Series[] }>('query', { query: expr, time })).result,
    alerts: async () => (await api<{ alerts: Alert[] }>('alerts')).alerts,
    ruleGroups: async () => (await api<{ groups: RuleGroupState[] }>('rules')).groups,
    targets: async () => (await api<{ activeTargets: TargetState[] }>('targets')).activeTargets,
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
