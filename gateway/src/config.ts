import { isIP } from 'node:net';
import {
  ConfigError,
  listenPort,
  positiveInteger,
  requireUrlScheme,
  SERVICE_ENV,
  type ServiceSettings,
  serviceSettings,
  throwOnError,
  withFileVariants,
} from '@petstore/runtime';
import { environmentProxy, InvalidTargetError, ProxySettingError, type ProxySettings } from '@petstore/proto';
import { bool, cleanEnv, EnvError, makeValidator, num, str } from 'envalid';

/** Express's `trust proxy` setting: whether, or from which hops, X-Forwarded-For is believed. */
export type TrustProxy = boolean | number | readonly string[];

/** CORS_ORIGINS as parsed here: exact origins, or `*` for any (development only). */
export type CorsOrigins = '*' | readonly string[];

/**
 * How a process counts while Redis is out: `split`, its share of every limit, so that the processes
 * together keep about the shared limit; `full`, every limit on every process (docs/rate-limits.md#when-redis-is-down-each-process-enforces-its-share).
 */
export type FallbackMode = 'split' | 'full';

/** The ids a keys file may hold; METRICS_KEY_IDS names keys by them. */
export const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The gateway's settings, read once at startup by `main.ts`. */
export interface GatewayConfig extends ServiceSettings {
  readonly host: string;
  readonly port: number;
  /** gRPC target of the pet service. */
  readonly petServiceAddress: string;
  readonly petServiceTimeoutMs: number;
  /** TLS (and the client certificate) of calls to the pet service; undefined: plaintext. */
  readonly petServiceTls: PetServiceTls | undefined;
  /** The HTTP CONNECT proxy calls to the pet service tunnel through (`grpc_proxy` …); false: none. */
  readonly petServiceProxy: ProxySettings | false;
  readonly apiKeysFile: string;
  /** YAML routes proxied to HTTP upstreams; undefined: none. */
  readonly routesFile: string | undefined;
  /** Where the shared counters live; undefined: in this process only. */
  readonly redis: RedisTarget | undefined;
  readonly redisCommandTimeoutMs: number;
  /** Longest startup wait for Redis before serving with in-memory counters. */
  readonly redisStartupWaitMs: number;
  /** How limits are counted while Redis is out (RATE_LIMIT_FALLBACK). */
  readonly fallbackMode: FallbackMode;
  /**
   * Gateway replicas to assume until the heartbeat in Redis has given a count (a gateway that
   * starts during an outage); each runs `workers` counting processes. Undefined: this one alone.
   */
  readonly fallbackReplicas: number | undefined;
  readonly banThreshold: number;
  readonly banSeconds: number;
  readonly unauthenticatedPerMinute: number;
  /** Client addresses counted apart per minute in memory; later ones share one overflow bucket. */
  readonly unauthenticatedMaxAddresses: number;
  readonly trustProxy: TrustProxy;
  /** Browser origins allowed to call the API; empty: none, no CORS headers (docs/cors.md). */
  readonly corsOrigins: CorsOrigins;
  /** Timeouts and the connection cap of the public listener (see `http/http-server.ts`). */
  readonly connectionLimits: {
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
    readonly maxConnections: number;
  };
  readonly adminHost: string;
  readonly adminPort: number;
  /** Guards the admin port's state-changing routes; undefined: loopback clients only. */
  readonly adminToken: string | undefined;
  /** Processes serving the public port (Node's cluster module); more than 1 needs `redis`. */
  readonly workers: number;
  /** Key ids whose rate-limit decisions are counted by id as well as by plan; at most {@link MAX_METRICS_KEY_IDS}. */
  readonly metricsKeyIds: readonly string[];
}

/** The secrets that may be given as a file instead (`<NAME>_FILE`; runtime's `resolveSecretFiles`). */
export const SECRET_VARIABLES = ['REDIS_URL', 'REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD', 'ADMIN_TOKEN'] as const;

/** Most key ids METRICS_KEY_IDS may list: each adds three series, and Prometheus pays per series. */
export const MAX_METRICS_KEY_IDS = 50;

/** One `host:port` of a Redis Cluster seed or a Sentinel. */
export interface RedisEndpoint {
  readonly host: string;
  readonly port: number;
}

/** Credentials and TLS of the data nodes of a Cluster or a Sentinel-managed Redis. */
export interface RedisDataAccess {
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly tls: boolean;
}

/**
 * The one Redis deployment the shared counters live on, with the variable that chose it, so every
 * message about it can name what to change.
 */
export type RedisTarget =
  | { readonly kind: 'standalone'; readonly variable: 'REDIS_URL'; readonly url: string }
  | ({ readonly kind: 'cluster'; readonly variable: 'REDIS_CLUSTER_NODES'; readonly nodes: readonly RedisEndpoint[] } & RedisDataAccess)
  | ({
      readonly kind: 'sentinel';
      readonly variable: 'REDIS_SENTINELS';
      readonly sentinels: readonly RedisEndpoint[];
      readonly masterName: string;
      readonly sentinelUsername: string | undefined;
      readonly sentinelPassword: string | undefined;
    } & RedisDataAccess);

/** The variables that each select a Redis deployment; at most one may be set. */
export const REDIS_TARGET_VARIABLES = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_SENTINELS'] as const;

/** Empty, or a comma-separated list of `host:port` (IPv6 hosts in brackets). */
const endpointList = makeValidator<readonly RedisEndpoint[]>((input) => {
  const text = input.trim();
  if (text === '') return Object.freeze([]);
  return Object.freeze(
    text.split(',').map((entry) => {
      const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):([0-9]{1,5})$/.exec(entry.trim());
      const port = Number(match?.[2]);
      if (match === null || port < 1 || port > 65535) throw new EnvError(`"${entry.trim()}" is not host:port`);
      return Object.freeze({ host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port });
    }),
  );
});

/** Empty, or a redis:// or rediss:// URL. */
const redisUrl = makeValidator<string>((input) => {
  if (input !== '') requireUrlScheme(input, ['redis:', 'rediss:'], 'must be a redis:// or rediss:// URL');
  return input;
});

/** Most gateway replicas RATE_LIMIT_FALLBACK_REPLICAS may name. */
const MAX_FALLBACK_REPLICAS = 10_000;

/** Empty (read as 0: none given), or a replica count from 1 to {@link MAX_FALLBACK_REPLICAS}. */
const replicaCount = makeValidator<number>((input) => {
  const text = input.trim();
  if (text === '') return 0;
  const count = Number(text);
  if (!/^[0-9]+$/.test(text) || count < 1 || count > MAX_FALLBACK_REPLICAS) {
    throw new EnvError(`must be empty or a whole number from 1 to ${MAX_FALLBACK_REPLICAS}`);
  }
  return count;
});

/** Empty, or a secret long enough not to be guessed. */
const adminToken = makeValidator<string>((input) => {
  if (input !== '' && (input.length < 16 || /\s/.test(input))) throw new EnvError('must be empty or at least 16 characters without spaces');
  return input;
});

/** Empty, or comma-separated key ids as the keys file spells them, at most {@link MAX_METRICS_KEY_IDS}. */
const metricsKeyIds = makeValidator<readonly string[]>((input) => {
  const text = input.trim();
  if (text === '') return Object.freeze([]);
  const ids = [...new Set(text.split(',').map((entry) => entry.trim()))];
  for (const id of ids) {
    if (!KEY_ID.test(id)) throw new EnvError(`"${id}" is not a key id (1 to 64 letters, digits, dots, dashes or underscores)`);
  }
  if (ids.length > MAX_METRICS_KEY_IDS) throw new EnvError(`at most ${MAX_METRICS_KEY_IDS} key ids (${ids.length} given): count the rest by plan`);
  return Object.freeze(ids);
});

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** `false`, `true`, a hop count, or a comma-separated list of addresses, CIDRs or range names. */
const trustProxy = makeValidator<TrustProxy>((input) => {
  const text = input.trim();
  if (text === 'false' || text === '') return false;
  if (text === 'true') return true;
  if (/^[0-9]+$/.test(text)) return Number(text);
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (!PROXY_RANGE_NAMES.has(entry) && !isAddressOrCidr(entry)) {
      throw new EnvError(`must be true, false, a hop count or addresses/CIDRs; "${entry}" is none`);
    }
  }
  return Object.freeze(entries);
});

/**
 * Empty (no CORS), `*` alone (any origin; for development), or a comma-separated list of exact
 * origins written as browsers send them in `Origin`: scheme, host and a port other than the
 * default, lowercase, without path or trailing slash. Browsers compare that text exactly, so a
 * near miss such as `https://app.example.com/` is refused here rather than never matching.
 */
const corsOrigins = makeValidator<CorsOrigins>((input) => {
  const text = input.trim();
  if (text === '') return Object.freeze([]);
  if (text === '*') return '*';
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (entry === '*') throw new EnvError('"*" allows every origin, so it must stand alone');
    if (entry.includes('*')) throw new EnvError(`"${entry}": no wildcards within an origin; list each origin`);
    const origin = webOrigin(entry);
    if (origin === entry) continue;
    throw new EnvError(
      origin === undefined
        ? `"${entry}" is not an http or https origin (scheme://host[:port])`
        : `"${entry}" is not an origin as browsers send it; write "${origin}"`,
    );
  }
  return Object.freeze([...new Set(entries)]);
});

function webOrigin(entry: string): string | undefined {
  try {
    const url = new URL(entry);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^[0-9]+$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * A gRPC target as grpc-js reads it: `host[:port]`, `[IPv6][:port]`, a bare IPv6 address, or the
 * same after `dns:` (`dns:///name:port`, to balance over every address); `ipv4:`, `ipv6:` and
 * `unix:` targets are taken as written. grpc-js accepts any text and only fails each call with
 * UNAVAILABLE, so a typo (`::::`) would leave a gateway that says it is listening and answers
 * every call with 503.
 */
const grpcTarget = makeValidator<string>((input) => {
  if (/^(?:ipv4|ipv6|unix|unix-abstract):./.test(input)) return input;
  const authority = input.replace(/^dns:(?:\/\/[^/]*\/)?/, '');
  if (!isHostAndPort(authority)) throw new EnvError('must be a gRPC target: host:port, [IPv6]:port or dns:///host:port');
  return input;
});

function isHostAndPort(authority: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(authority);
  if (bracketed !== null) return isIP(bracketed[1]!) === 6 && isPort(bracketed[2]);
  if (authority.indexOf(':') !== authority.lastIndexOf(':')) return isIP(authority) === 6;
  const [host = '', port] = authority.split(':');
  return /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host) && !host.includes('..') && isPort(port);
}

function isPort(port: string | undefined): boolean {
  return port === undefined || (/^[0-9]{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535);
}

/** TLS to the pet service, as the configuration gives it. */
export interface PetServiceTls {
  /** The CA the pet service's certificate must chain to. */
  readonly caFile: string;
  /** The gateway's client certificate and key, which a pet service requiring them checks. */
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

/** The variables of {@link PetServiceTls}, for the gateway's envalid spec. */
const PET_SERVICE_TLS_ENV = {
  PET_SERVICE_TLS_CA_FILE: str({ default: '', desc: "PEM CA bundle the pet service's certificate is checked against; set, calls use TLS; empty: plaintext" }),
  PET_SERVICE_TLS_CERT_FILE: str({ default: '', desc: 'PEM client certificate (chain) the gateway presents to the pet service (mutual TLS)' }),
  PET_SERVICE_TLS_KEY_FILE: str({ default: '', desc: 'PEM private key of PET_SERVICE_TLS_CERT_FILE' }),
};

/** The TLS settings, or undefined for plaintext. @throws ConfigError naming the variable */
function petServiceTls(parsed: { PET_SERVICE_TLS_CA_FILE: string; PET_SERVICE_TLS_CERT_FILE: string; PET_SERVICE_TLS_KEY_FILE: string }): PetServiceTls | undefined {
  const { PET_SERVICE_TLS_CA_FILE: caFile, PET_SERVICE_TLS_CERT_FILE: certFile, PET_SERVICE_TLS_KEY_FILE: keyFile } = parsed;
  if ((certFile === '') !== (keyFile === '')) {
    throw new ConfigError(certFile === '' ? 'PET_SERVICE_TLS_CERT_FILE: required with PET_SERVICE_TLS_KEY_FILE' : 'PET_SERVICE_TLS_KEY_FILE: required with PET_SERVICE_TLS_CERT_FILE');
  }
  if (caFile === '') {
    if (certFile !== '') throw new ConfigError("PET_SERVICE_TLS_CERT_FILE: applies only with PET_SERVICE_TLS_CA_FILE (the CA the pet service's certificate is checked against)");
    return undefined;
  }
  return Object.freeze({ caFile, certFile: certFile === '' ? undefined : certFile, keyFile: keyFile === '' ? undefined : keyFile });
}

/**
 * The proxy variables, named as grpc-js reads them (lowercase), so that the gateway reads them here,
 * once, rather than the pet service client reading the process's environment.
 */
const PROXY_ENV = {
  grpc_proxy: str({ default: '', desc: 'HTTP CONNECT proxy of the calls to the pet service, http://[user:password@]host[:port]; before https_proxy and http_proxy' }),
  https_proxy: str({ default: '', desc: 'The proxy, when grpc_proxy is empty' }),
  http_proxy: str({ default: '', desc: 'The proxy, when grpc_proxy and https_proxy are empty' }),
  no_grpc_proxy: str({ default: '', desc: 'Comma-separated hosts, name suffixes, addresses and IPv4 CIDRs reached without the proxy; before no_proxy' }),
  no_proxy: str({ default: '', desc: 'The hosts reached without the proxy, when no_grpc_proxy is empty' }),
};

/**
 * The proxy of the calls to the pet service, read as grpc-js reads the variables (@petstore/proto's
 * `environmentProxy`); false where none is set or the pet service's host is excepted.
 * @throws ConfigError naming the variable whose value cannot be used, where the client would
 * otherwise ignore it and connect directly
 */
function petServiceProxy(target: string, parsed: Record<keyof typeof PROXY_ENV, string>): ProxySettings | false {
  try {
    return environmentProxy(target, parsed) ?? false;
  } catch (error) {
    if (error instanceof ProxySettingError) throw new ConfigError(error.message);
    if (error instanceof InvalidTargetError) throw new ConfigError(`PET_SERVICE_ADDR: ${error.message}`);
    throw error;
  }
}

/** The variables the gateway reads, as envalid validators. */
function environmentSpec(defaultKeysFile: string) {
  return {
    HOST: str({ default: '0.0.0.0', desc: 'Interface the HTTP server binds' }),
    PORT: listenPort({ default: 8080, desc: 'HTTP port; 0 picks a free one' }),
    PET_SERVICE_ADDR: grpcTarget({ default: 'localhost:50051', desc: 'gRPC target of the pet service' }),
    PET_SERVICE_TIMEOUT_MS: num({ default: 2000, desc: 'Deadline of every call to the pet service' }),
    ...PET_SERVICE_TLS_ENV,
    ...PROXY_ENV,
    API_KEYS_FILE: str({ default: defaultKeysFile, desc: 'YAML or JSON keys file' }),
    ROUTES_FILE: str({ default: '', desc: 'YAML routes proxied to HTTP upstreams (docs/routes.md); empty: none' }),
    REDIS_URL: redisUrl({ default: '', desc: 'Shared rate-limit counters on one Redis; empty keeps them in this process' }),
    REDIS_CLUSTER_NODES: endpointList({
      default: Object.freeze([]),
      desc: 'Comma-separated host:port seeds of a Redis Cluster holding the shared counters (instead of REDIS_URL)',
    }),
    REDIS_SENTINELS: endpointList({
      default: Object.freeze([]),
      desc: 'Comma-separated host:port of the Sentinels of a Redis holding the shared counters (instead of REDIS_URL)',
    }),
    REDIS_SENTINEL_MASTER: str({ default: '', desc: 'Name the Sentinels monitor the master under; required with REDIS_SENTINELS' }),
    REDIS_USERNAME: str({ default: '', desc: 'ACL user of the Cluster or Sentinel-managed data nodes (REDIS_URL carries its own)' }),
    REDIS_PASSWORD: str({ default: '', desc: 'Password of the Cluster or Sentinel-managed data nodes (REDIS_URL carries its own)' }),
    REDIS_TLS: bool({ default: false, desc: 'TLS to the Cluster nodes, or to the Sentinels and their Redis (REDIS_URL says rediss://)' }),
    REDIS_SENTINEL_USERNAME: str({ default: '', desc: 'ACL user of the Sentinels, when they require one' }),
    REDIS_SENTINEL_PASSWORD: str({ default: '', desc: 'Password of the Sentinels, when they require one' }),
    REDIS_COMMAND_TIMEOUT_MS: positiveInteger({ default: 200, desc: 'Longest wait for Redis before a request falls back' }),
    REDIS_STARTUP_WAIT_MS: num({ default: 3000, desc: 'Longest startup wait for Redis; then serve with the fallback' }),
    RATE_LIMIT_FALLBACK: str({
      default: 'split',
      choices: ['split', 'full'],
      desc: 'While Redis is out: split each limit over the counting processes (split), or enforce it whole on each (full)',
    }),
    RATE_LIMIT_FALLBACK_REPLICAS: replicaCount({
      default: 0,
      desc: 'Gateway replicas to assume while no heartbeat was seen in Redis (a start during an outage); empty: this one',
    }),
    BAN_THRESHOLD: positiveInteger({ default: 10, desc: 'Requests tolerated while limited before a ban' }),
    BAN_SECONDS: positiveInteger({ default: 900, desc: 'Length of a temporary ban' }),
    UNAUTHENTICATED_PER_MINUTE: positiveInteger({ default: 60, desc: 'Per client IP, requests without a valid key' }),
    UNAUTHENTICATED_MAX_ADDRESSES: positiveInteger({
      // Bounds the heap the per-IP counters can take (docs/rate-limits.md#under-abuse gives the size).
      default: 50_000,
      desc: 'Client addresses counted apart per minute in memory; addresses first seen after that share one bucket',
    }),
    TRUST_PROXY: trustProxy({ default: false, desc: 'Whether X-Forwarded-For is believed: true, false, hops or CIDRs' }),
    CORS_ORIGINS: corsOrigins({
      default: Object.freeze([]),
      desc: 'Comma-separated origins (https://app.example.com) whose pages may call the API; * any (development only); empty: none',
    }),
    ADMIN_HOST: str({
      default: '0.0.0.0',
      desc: 'Interface of the admin listener; kubelet probes and Prometheus reach it on the pod IP. Never expose it publicly',
    }),
    ADMIN_TOKEN: adminToken({
      default: '',
      desc: 'Bearer token for the admin port\'s state-changing routes (from a Secret); empty: loopback clients only',
    }),
    ADMIN_PORT: listenPort({ default: 9090, desc: 'Port of /metrics, /healthz, /readyz and /admin; 0 picks a free one' }),
    HTTP_HEADERS_TIMEOUT_MS: positiveInteger({ default: 10000, desc: 'Longest wait for a request\'s headers, from its first byte' }),
    HTTP_REQUEST_TIMEOUT_MS: positiveInteger({ default: 30000, desc: 'Longest wait for a whole request, body included' }),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInteger({ default: 65000, desc: 'Idle keep-alive connections are closed after this; above the load balancer\'s idle timeout' }),
    MAX_CONNECTIONS: positiveInteger({ default: 4096, desc: 'Connections to the public port beyond this are closed as they arrive' }),
    ...SERVICE_ENV,
    GATEWAY_WORKERS: positiveInteger({ default: 1, desc: 'Worker processes sharing the public port; more than 1 needs a shared Redis' }),
    METRICS_KEY_IDS: metricsKeyIds({
      default: Object.freeze([]),
      desc: `Comma-separated key ids (at most ${MAX_METRICS_KEY_IDS}) whose rate-limit decisions are also counted by key id; empty: by plan only`,
    }),
  };
}

type ParsedEnvironment = ReturnType<typeof cleanEnv<ReturnType<typeof environmentSpec>>>;

/**
 * The Redis deployment the variables select. Exactly one of {@link REDIS_TARGET_VARIABLES} may be
 * set; the credentials and TLS variables of one deployment are refused beside another, where they
 * would be silently ignored.
 */
function redisTarget(parsed: ParsedEnvironment): RedisTarget | undefined {
  const set = REDIS_TARGET_VARIABLES.filter((name) => parsed[name].length > 0);
  if (set.length > 1) {
    throw new ConfigError(`${set.join(' and ')}: set only one; each selects a different Redis deployment (docs/rate-limits.md#redis-topologies)`);
  }
  const [selected] = set;
  const orphan = (names: ReadonlyArray<keyof ParsedEnvironment>, needs: string): void => {
    // A string variable is set when not empty; REDIS_TLS, the one flag, when true.
    const name = names.find((candidate) => parsed[candidate] !== '' && parsed[candidate] !== false);
    if (name !== undefined) throw new ConfigError(`${String(name)}: applies only with ${needs}`);
  };
  if (selected !== 'REDIS_SENTINELS') {
    orphan(['REDIS_SENTINEL_MASTER', 'REDIS_SENTINEL_USERNAME', 'REDIS_SENTINEL_PASSWORD'], 'REDIS_SENTINELS');
  }
  if (selected === undefined || selected === 'REDIS_URL') {
    orphan(
      ['REDIS_USERNAME', 'REDIS_PASSWORD', 'REDIS_TLS'],
      selected === undefined ? 'REDIS_CLUSTER_NODES or REDIS_SENTINELS' : 'REDIS_CLUSTER_NODES or REDIS_SENTINELS; REDIS_URL carries its own (rediss://user:password@host)',
    );
  }
  const access: RedisDataAccess = {
    username: parsed.REDIS_USERNAME === '' ? undefined : parsed.REDIS_USERNAME,
    password: parsed.REDIS_PASSWORD === '' ? undefined : parsed.REDIS_PASSWORD,
    tls: parsed.REDIS_TLS,
  };
  switch (selected) {
    case undefined:
      return undefined;
    case 'REDIS_URL':
      return Object.freeze({ kind: 'standalone', variable: selected, url: parsed.REDIS_URL });
    case 'REDIS_CLUSTER_NODES':
      return Object.freeze({ kind: 'cluster', variable: selected, nodes: parsed.REDIS_CLUSTER_NODES, ...access });
    case 'REDIS_SENTINELS':
      if (parsed.REDIS_SENTINEL_MASTER === '') throw new ConfigError('REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS (the name the Sentinels monitor)');
      return Object.freeze({
        kind: 'sentinel',
        variable: selected,
        sentinels: parsed.REDIS_SENTINELS,
        masterName: parsed.REDIS_SENTINEL_MASTER,
        sentinelUsername: parsed.REDIS_SENTINEL_USERNAME === '' ? undefined : parsed.REDIS_SENTINEL_USERNAME,
        sentinelPassword: parsed.REDIS_SENTINEL_PASSWORD === '' ? undefined : parsed.REDIS_SENTINEL_PASSWORD,
        ...access,
      });
  }
}

/** Every environment variable the gateway reads (deployment manifests are checked against it). */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.freeze([...Object.keys(environmentSpec('')), ...withFileVariants(SECRET_VARIABLES), 'NODE_ENV']);

/**
 * Parses and validates the environment. Throws one Error naming every bad variable.
 * `prettyAvailable` says whether pino-pretty can be loaded (a seam for tests; default: try to load it).
 */
export function parseConfig(
  env: NodeJS.ProcessEnv,
  defaultKeysFile: string,
  prettyAvailable?: () => boolean,
): GatewayConfig {
  const parsed = cleanEnv(env, environmentSpec(defaultKeysFile), { reporter: throwOnError });
  if (!(parsed.PET_SERVICE_TIMEOUT_MS > 0)) throw new ConfigError('PET_SERVICE_TIMEOUT_MS: must be positive');
  if (!(parsed.REDIS_STARTUP_WAIT_MS >= 0)) throw new ConfigError('REDIS_STARTUP_WAIT_MS: must not be negative');
  if (parsed.HTTP_REQUEST_TIMEOUT_MS < parsed.HTTP_HEADERS_TIMEOUT_MS) {
    throw new ConfigError('HTTP_REQUEST_TIMEOUT_MS: must not be below HTTP_HEADERS_TIMEOUT_MS');
  }
  if (parsed.GATEWAY_WORKERS > 64) throw new ConfigError('GATEWAY_WORKERS: must be at most 64');
  const redis = redisTarget(parsed);
  if (parsed.GATEWAY_WORKERS > 1 && redis === undefined) {
    // Each worker would keep its own counters: a key could make N times its plan's requests.
    throw new ConfigError(
      'GATEWAY_WORKERS: more than 1 needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS, so that every worker counts against the same limits',
    );
  }
  const fallbackReplicas = parsed.RATE_LIMIT_FALLBACK_REPLICAS === 0 ? undefined : parsed.RATE_LIMIT_FALLBACK_REPLICAS;
  // Both describe the fallback of shared counters: without Redis they would be silently ignored.
  const fallbackSetting = fallbackReplicas !== undefined ? 'RATE_LIMIT_FALLBACK_REPLICAS' : parsed.RATE_LIMIT_FALLBACK === 'full' ? 'RATE_LIMIT_FALLBACK' : undefined;
  if (fallbackSetting !== undefined && redis === undefined) {
    throw new ConfigError(`${fallbackSetting}: applies only with REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (it says how their outage is counted)`);
  }
  if (fallbackReplicas !== undefined && parsed.RATE_LIMIT_FALLBACK === 'full') {
    throw new ConfigError('RATE_LIMIT_FALLBACK_REPLICAS: applies only with RATE_LIMIT_FALLBACK=split');
  }
  const shared = serviceSettings(parsed, env, 'gateway', prettyAvailable);
  return Object.freeze({
    ...shared,
    host: parsed.HOST,
    port: parsed.PORT,
    petServiceAddress: parsed.PET_SERVICE_ADDR,
    petServiceTimeoutMs: parsed.PET_SERVICE_TIMEOUT_MS,
    petServiceTls: petServiceTls(parsed),
    petServiceProxy: petServiceProxy(parsed.PET_SERVICE_ADDR, parsed),
    apiKeysFile: parsed.API_KEYS_FILE,
    routesFile: parsed.ROUTES_FILE === '' ? undefined : parsed.ROUTES_FILE,
    redis,
    redisCommandTimeoutMs: parsed.REDIS_COMMAND_TIMEOUT_MS,
    redisStartupWaitMs: parsed.REDIS_STARTUP_WAIT_MS,
    fallbackMode: parsed.RATE_LIMIT_FALLBACK as FallbackMode,
    fallbackReplicas,
    banThreshold: parsed.BAN_THRESHOLD,
    banSeconds: parsed.BAN_SECONDS,
    unauthenticatedPerMinute: parsed.UNAUTHENTICATED_PER_MINUTE,
    unauthenticatedMaxAddresses: parsed.UNAUTHENTICATED_MAX_ADDRESSES,
    trustProxy: parsed.TRUST_PROXY,
    corsOrigins: parsed.CORS_ORIGINS,
    connectionLimits: Object.freeze({
      headersTimeoutMs: parsed.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: parsed.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: parsed.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: parsed.MAX_CONNECTIONS,
    }),
    adminHost: parsed.ADMIN_HOST,
    adminPort: parsed.ADMIN_PORT,
    adminToken: parsed.ADMIN_TOKEN === '' ? undefined : parsed.ADMIN_TOKEN,
    workers: parsed.GATEWAY_WORKERS,
    metricsKeyIds: parsed.METRICS_KEY_IDS,
  });
}
