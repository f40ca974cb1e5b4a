import type { RedisTarget } from '../config';

/** The longest piece of a server's reply quoted in a message, so that it stays one readable line. */
const QUOTE_LENGTH = 100;

function quote(error: Error): string {
  const text = error.message.replace(/\s+/g, ' ').trim();
  return text.length > QUOTE_LENGTH ? `${text.slice(0, QUOTE_LENGTH)}…` : text;
}

const REFUSED_CREDENTIALS = /\b(WRONGPASS|NOAUTH)\b/;
/** A command the ACL refuses; one a script runs is refused with ERR and this text (Redis 7). */
const NO_PERMISSION = /\bNOPERM\b|user executing the script can't run this command/;
const UNKNOWN_COMMAND = /\bunknown command\b/i;
/** What ioredis's Sentinel connector says of one Sentinel, or of all of them. */
const FROM_SENTINEL = /^(failed to connect to sentinel|connected to sentinel|All sentinels are unreachable)/;

/**
 * When `error` is one that waiting will not fix (the deployment is not the kind the variable says,
 * a replica where the master belongs, refused credentials or commands), the one line an operator
 * needs: the variable to change, what is wrong, and the fix. `undefined` for everything else
 * (timeouts, refused or dropped connections, a failover in progress), which is an outage the
 * limiter rides out by counting in memory.
 *
 * Some answers are misconfigurations only for one kind of client: MOVED or READONLY is routine for
 * a Cluster client (which follows it) and a Sentinel client (which reconnects to the new master),
 * but on a single `REDIS_URL` connection it means the URL names the wrong server.
 */
export function misconfiguration(error: Error, target: RedisTarget): string | undefined {
  const message = error.message;
  const reply = quote(error);
  switch (target.kind) {
    case 'standalone':
      if (/^(MOVED|ASK) /.test(message)) {
        return `REDIS_URL: points at a Redis Cluster node, which refuses other nodes' keys (${reply}); list the cluster's nodes in REDIS_CLUSTER_NODES instead`;
      }
      if (message.startsWith('READONLY')) {
        return `REDIS_URL: points at a read-only replica (${reply}); point it at the master, or follow failovers with REDIS_SENTINELS`;
      }
      if (UNKNOWN_COMMAND.test(message)) {
        return `REDIS_URL: the server refuses a command the limiter needs (${reply}); if it is a Sentinel, set REDIS_SENTINELS and REDIS_SENTINEL_MASTER instead`;
      }
      if (REFUSED_CREDENTIALS.test(message)) {
        return `REDIS_URL: Redis refuses its credentials (${reply}); put the right ones in the URL (redis://user:password@host:port)`;
      }
      if (NO_PERMISSION.test(message)) return noPermission('REDIS_URL', reply);
      return undefined;
    case 'cluster':
      if (/cluster support disabled/i.test(message)) {
        return `REDIS_CLUSTER_NODES: a node is no cluster node (${reply}); for a single Redis set REDIS_URL instead`;
      }
      if (UNKNOWN_COMMAND.test(message)) {
        return `REDIS_CLUSTER_NODES: a node refuses a command the limiter needs (${reply}); list the cluster nodes' own ports (a Sentinel's port answers like this)`;
      }
      if (REFUSED_CREDENTIALS.test(message)) {
        return `REDIS_PASSWORD: the cluster nodes refuse the credentials (${reply}); set REDIS_USERNAME and REDIS_PASSWORD to the nodes' own`;
      }
      if (NO_PERMISSION.test(message)) return noPermission('REDIS_USERNAME', reply);
      return undefined;
    case 'sentinel':
      if (FROM_SENTINEL.test(message)) {
        if (REFUSED_CREDENTIALS.test(message)) {
          return `REDIS_SENTINEL_PASSWORD: the Sentinels refuse the credentials (${reply}); set REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD to theirs (REDIS_PASSWORD is the data nodes')`;
        }
        if (UNKNOWN_COMMAND.test(message)) {
          return `REDIS_SENTINELS: lists a server that is no Sentinel (${reply}); list the Sentinels' ports (26379 by default), not Redis's`;
        }
        if (/No such master with that name|invalid reply: null/.test(message)) {
          return `REDIS_SENTINEL_MASTER: the Sentinels monitor no master named "${target.masterName}"; set the name of their "sentinel monitor" line`;
        }
        return undefined;
      }
      if (REFUSED_CREDENTIALS.test(message)) {
        return `REDIS_PASSWORD: the master refuses the credentials (${reply}); set REDIS_USERNAME and REDIS_PASSWORD to the data nodes' own (REDIS_SENTINEL_PASSWORD is the Sentinels')`;
      }
      if (UNKNOWN_COMMAND.test(message)) {
        return `REDIS_SENTINELS: the master refuses a command the limiter needs (${reply}); allow scripting (EVAL, EVALSHA) on it`;
      }
      if (NO_PERMISSION.test(message)) return noPermission('REDIS_USERNAME', reply);
      return undefined;
  }
}

/**
 * For `REDIS_URL`, what its `INFO` (server and replication sections) says is wrong with it, before
 * any key meets it: a Cluster node answers the keys of its own slots and MOVED for the others, and
 * a Sentinel or a replica may pass a ready check.
 */
export function singleRedisProblem(info: string): string | undefined {
  switch (/^redis_mode:(\w+)/m.exec(info)?.[1]) {
    case 'cluster':
      return "REDIS_URL: points at a Redis Cluster node, which refuses other nodes' keys (MOVED); list the cluster's nodes in REDIS_CLUSTER_NODES instead";
    case 'sentinel':
      return "REDIS_URL: points at a Sentinel, which holds no data; set REDIS_SENTINELS to the Sentinels and REDIS_SENTINEL_MASTER to the master's name instead";
  }
  if (/^role:slave/m.test(info)) {
    return 'REDIS_URL: points at a read-only replica (READONLY); point it at the master, or follow failovers with REDIS_SENTINELS';
  }
  return undefined;
}

function noPermission(variable: string, reply: string): string {
  return `${variable}: the user may not run the limiter's commands (${reply}); give it the rules of deploy/base/redis-gateway.acl`;
}

/** What happens to each reported misconfiguration. */
export interface MisconfigurationMonitorOptions {
  /**
   * One error-level line: for a problem unlike the last one logged at once, for the same one at
   * most once per `logIntervalMs`, with the occurrences it summarises.
   */
  readonly log: (problem: string, occurrences: number) => void;
  /** Every occurrence, for the metric. */
  readonly count: () => void;
  /** Monotonic ms. */
  readonly now: () => number;
  /** Default one minute: enough to page someone, too little to flood the logs. */
  readonly logIntervalMs?: number;
}

/** The limiter's state as /readyz shows it. */
export interface MisconfigurationMonitor {
  /** An error from Redis or its client; ignored unless it is a misconfiguration. */
  report(error: Error): void;
  /** The last misconfiguration seen since Redis last counted a request, if any. */
  readonly problem: string | undefined;
  /** Redis counted a request: whatever was wrong is no longer. */
  clear(): void;
}

/** Remembers, counts and logs (rate-limited) the misconfigurations of `target` met at run time. */
export function createMisconfigurationMonitor(target: RedisTarget, options: MisconfigurationMonitorOptions): MisconfigurationMonitor {
  const interval = options.logIntervalMs ?? 60_000;
  let problem: string | undefined;
  let logged: string | undefined;
  let loggedAt = -Infinity;
  let unlogged = 0;
  return {
    report(error) {
      const found = misconfiguration(error, target);
      if (found === undefined) return;
      problem = found;
      options.count();
      unlogged += 1;
      const now = options.now();
      if (found === logged && now - loggedAt < interval) return;
      logged = found;
      loggedAt = now;
      options.log(found, unlogged);
      unlogged = 0;
    },
    get problem() {
      return problem;
    },
    clear() {
      problem = undefined;
    },
  };
}
