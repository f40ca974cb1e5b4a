import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';

const ROOT = join(__dirname, '..', '..');
const SCRIPTS = join(ROOT, 'deploy', 'overlays', 'production', 'redis-sentinel');
const NAMESPACE = 'petstore';
const host = (pod: string) => `${pod}.redis.${NAMESPACE}.svc.cluster.local`;

/**
 * What one member's Sentinel does from a second of the fake clock on: refuse connections, say
 * nothing (redis-cli's `timeout 3` then ends it), answer with an error, or name a master.
 */
type Behaviour = 'refused' | 'silent' | 'error' | { master: string };

interface World {
  /** The pod the script runs in (`hostname`). */
  readonly self: string;
  /** Per member, its Sentinel's behaviour from each second on (the last one at or before the clock applies). */
  readonly sentinels: Record<0 | 1 | 2, ReadonlyArray<readonly [from: number, behaviour: Behaviour]>>;
  /**
   * Per member, its Sentinel's reply to `SENTINEL failover` (redis-cli exits 0 on an error reply
   * too). After `OK` that Sentinel reports a failover in progress, until it names another master
   * or `failoverAbortsAfter` seconds have passed.
   */
  readonly failoverReplies?: Partial<Record<0 | 1 | 2, string>>;
  /** Seconds after which an accepted failover ends without a promotion (`-failover-abort-no-good-slave`). */
  readonly failoverAbortsAfter?: number;
  /**
   * The replicas every Sentinel knows (`SENTINEL replicas`): pod, flags, replication offset.
   * Default: the two pods other than `self`, up, each with a copy (offset 1000).
   */
  readonly replicas?: ReadonlyArray<readonly [pod: string, flags: string, offset: number]>;
}

interface Outcome {
  /** redis-server's arguments: `--replicaof` names the master it copies, none means it starts as the master. */
  readonly replicaOf: string | undefined;
  /** redis-cli calls in order: `get`, `master`, `replicas` or `failover`, then the member. */
  readonly calls: string[];
  /** The fake clock when redis-server started (seconds after the script's start). */
  readonly startedAt: number;
}

/**
 * Stubs for every command the script runs that touches the set or the time: `redis-cli` plays the
 * Sentinels from the world's timeline, `date`/`sleep`/`timeout` run on a fake clock (a silent
 * Sentinel costs the 3 s `timeout` gives it), `hostname` is the pod, `redis-server` records its
 * arguments. The script itself, find-master.sh and redis-acl.sh run unchanged.
 */
const STUBS: Record<string, string> = {
  hostname: 'echo "$FAKE_HOSTNAME"',
  date: 'cat "$FAKE_DIR/clock"',
  sleep: 'echo $(( $(cat "$FAKE_DIR/clock") + $1 )) > "$FAKE_DIR/clock"',
  timeout: 'shift; exec "$@"',
  'redis-server': 'printf "%s\\n" "$@" > "$FAKE_DIR/server-args"; cat "$FAKE_DIR/clock" > "$FAKE_DIR/started-at"',
  'redis-cli': [
    'member="$(printf %s "$*" | sed -n "s/.*-h redis-\\([0-9]\\)\\..*/\\1/p")"',
    'now="$(cat "$FAKE_DIR/clock")"',
    'case "$*" in *" failover "*) command=failover ;; *" master "*) command=master ;; *" replicas "*) command=replicas ;; *) command=get ;; esac',
    'echo "$command $member" >> "$FAKE_DIR/calls"',
    'behaviour="$(awk -v now="$now" \'$1 <= now { b = $2 " " $3 } END { print b }\' "$FAKE_DIR/sentinel-$member")"',
    'case "$behaviour" in',
    '  "refused "*) echo "Could not connect to Redis" >&2; exit 1 ;;',
    '  "silent "*) echo $((now + 3)) > "$FAKE_DIR/clock"; exit 124 ;;',
    '  "error "*) echo "NOAUTH Authentication required."; exit 0 ;;',
    'esac',
    'named="${behaviour#master }.redis.petstore.svc.cluster.local"',
    '[ "$named" = "$FAKE_HOSTNAME.redis.petstore.svc.cluster.local" ] || rm -f "$FAKE_DIR/running-$member"',
    'case "$command" in',
    '  failover) reply="$(cat "$FAKE_DIR/failover-$member")"; [ "$reply" != OK ] || echo "$now" > "$FAKE_DIR/running-$member"; echo "$reply" ;;',
    '  master) flags=master; [ ! -e "$FAKE_DIR/running-$member" ] || [ "$now" -ge $(( $(cat "$FAKE_DIR/running-$member") + FAKE_ABORT_AFTER )) ] || flags="master,failover_in_progress"; printf "name\\npetstore-limits\\nip\\n%s\\nport\\n6379\\nflags\\n%s\\n" "$named" "$flags" ;;',
    '  replicas) cat "$FAKE_DIR/replicas" ;;',
    '  get) printf "%s\\n6379\\n" "$named" ;;',
    'esac',
  ].join('\n'),
};

function runStartRedis(world: World): Outcome {
  const dir = mkdtempSync(join(tmpdir(), 'redis-start-'));
  try {
    const [bin, secrets, config, run] = [join(dir, 'bin'), join(dir, 'secrets'), join(dir, 'config'), join(dir, 'run')] as const;
    for (const folder of [bin, secrets, config, run]) mkdirSync(folder);
    for (const [name, body] of Object.entries(STUBS)) {
      writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    }
    for (const secret of ['sentinel-password', 'sentinel-data-password', 'replication-password', 'admin-password', 'gateway-password']) {
      writeFileSync(join(secrets, secret), `${secret}-value`);
    }
    copyFileSync(join(ROOT, 'deploy', 'base', 'redis-acl.sh'), join(config, 'redis-acl.sh'));
    copyFileSync(join(ROOT, 'deploy', 'base', 'redis-gateway.acl'), join(config, 'redis-gateway.acl'));
    writeFileSync(join(dir, 'clock'), '0\n');
    writeFileSync(join(dir, 'calls'), '');
    for (const member of [0, 1, 2] as const) {
      const lines = world.sentinels[member].map(([from, b]) => `${from} ${typeof b === 'string' ? `${b} -` : `master ${b.master}`}`);
      writeFileSync(join(dir, `sentinel-${member}`), `${lines.join('\n')}\n`);
      writeFileSync(join(dir, `failover-${member}`), `${world.failoverReplies?.[member] ?? 'NOGOODSLAVE No suitable replica to promote'}\n`);
    }
    const replicas = world.replicas ?? ['redis-0', 'redis-1', 'redis-2'].filter((pod) => pod !== world.self).map((pod) => [pod, 'slave', 1000] as const);
    const replicaLines = replicas.map(([pod, flags, offset]) => ['name', `${host(pod)}:6379`, 'ip', host(pod), 'port', '6379', 'flags', flags, 'slave-repl-offset', String(offset)].join('\n'));
    writeFileSync(join(dir, 'replicas'), replicaLines.map((lines) => `${lines}\n`).join(''));
    const result = spawnSync('sh', [join(SCRIPTS, 'start-redis.sh')], {
      encoding: 'utf8',
      timeout: 20_000,
      env: {
        PATH: `${bin}:${process.env.PATH}`,
        FAKE_DIR: dir,
        FAKE_HOSTNAME: world.self,
        FAKE_ABORT_AFTER: String(world.failoverAbortsAfter ?? 1_000_000),
        NAMESPACE,
        MASTER_NAME: 'petstore-limits',
        SCRIPTS_DIR: SCRIPTS,
        REDIS_CONFIG_DIR: config,
        REDIS_SECRETS_DIR: secrets,
        REDIS_RUN_DIR: run,
      },
    });
    expect(result.status, result.stderr).to.equal(0);
    expect(existsSync(join(dir, 'server-args')), 'redis-server started').to.equal(true);
    const args = readFileSync(join(dir, 'server-args'), 'utf8').trim().split('\n');
    const replicaOf = args.includes('--replicaof') ? args[args.indexOf('--replicaof') + 1] : undefined;
    expect(args[args.indexOf('--replica-announce-ip') + 1]).to.equal(host(world.self));
    return {
      replicaOf,
      calls: readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n').filter(Boolean),
      startedAt: Number(readFileSync(join(dir, 'started-at'), 'utf8')),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * deploy/overlays/production/redis-sentinel/start-redis.sh, the decision a Redis pod makes when it
 * starts: never come back as an empty master that the replicas would copy (every key's counters
 * lost), and still start on the set's first deployment, when no Sentinel runs yet.
 */
describe('production Redis: what a starting Redis pod replicates', () => {
  it('on the set’s first start (no Sentinel answers for 30 s), pod 0 is the master and the others replicate it', () => {
    const none = { 0: [[0, 'refused']], 1: [[0, 'refused']], 2: [[0, 'refused']] } as const;
    const zero = runStartRedis({ self: 'redis-0', sentinels: none });
    expect(zero.replicaOf).to.equal(undefined);
    expect(zero.startedAt).to.be.at.least(30);
    expect(runStartRedis({ self: 'redis-1', sentinels: none }).replicaOf).to.equal(host('redis-0'));
  });

  it('pod 0, restarted while the other Sentinels are slow to answer, waits for them and replicates the promoted master', () => {
    // The cluster suite's failure: the deleted master (pod 0) came back while the other Sentinels
    // took longer than 3 s to answer, took the first-start path and the replicas copied its empty set.
    const outcome = runStartRedis({
      self: 'redis-0',
      sentinels: {
        0: [[0, { master: 'redis-0' }]],
        1: [[0, 'silent'], [12, { master: 'redis-0' }], [16, { master: 'redis-2' }]],
        2: [[0, 'silent'], [12, { master: 'redis-0' }], [16, { master: 'redis-2' }]],
      },
      failoverReplies: { 1: 'OK', 2: 'OK' },
    });
    expect(outcome.replicaOf).to.equal(host('redis-2'));
    expect(outcome.calls).to.include('failover 1');
  });

  it('never asks its own Sentinel, which restarted with it and knows only what it was told then', () => {
    const outcome = runStartRedis({
      self: 'redis-0',
      sentinels: { 0: [[0, { master: 'redis-0' }]], 1: [[0, { master: 'redis-2' }]], 2: [[0, { master: 'redis-2' }]] },
    });
    expect(outcome.replicaOf).to.equal(host('redis-2'));
    expect(outcome.calls.filter((call) => call.endsWith(' 0'))).to.deep.equal([]);
  });

  it('asks the next Sentinel to promote a replica when one answers the request with an error (redis-cli exits 0 on it)', () => {
    const outcome = runStartRedis({
      self: 'redis-2',
      sentinels: { 0: [[0, { master: 'redis-2' }], [3, { master: 'redis-1' }]], 1: [[0, { master: 'redis-2' }], [3, { master: 'redis-1' }]], 2: [[0, 'refused']] },
      failoverReplies: { 0: 'NOGOODSLAVE No suitable replica to promote', 1: 'OK' },
    });
    expect(outcome.calls.filter((call) => call.startsWith('failover'))).to.deep.equal(['failover 0', 'failover 1']);
    expect(outcome.replicaOf).to.equal(host('redis-1'));
  });

  it('takes an error reply for no answer, not for the master’s name', () => {
    const outcome = runStartRedis({
      self: 'redis-2',
      sentinels: { 0: [[0, 'error']], 1: [[0, { master: 'redis-1' }]], 2: [[0, 'refused']] },
    });
    expect(outcome.replicaOf).to.equal(host('redis-1'));
  });

  it('starts as the master at once when the Sentinels know no replica that is up and holds a copy (the whole set restarted)', () => {
    const namedSelf = { 0: [[0, 'refused']], 1: [[0, { master: 'redis-0' }]], 2: [[0, { master: 'redis-0' }]] } as const;
    for (const replicas of [[], [['redis-1', 'slave', 0], ['redis-2', 'slave', 0]], [['redis-1', 'slave,s_down', 1000], ['redis-2', 'slave,disconnected', 1000]]] as const) {
      const outcome = runStartRedis({ self: 'redis-0', sentinels: namedSelf, replicas });
      expect(outcome.replicaOf, JSON.stringify(replicas)).to.equal(undefined);
      expect(outcome.startedAt, JSON.stringify(replicas)).to.be.below(3);
      expect(outcome.calls.filter((call) => call.startsWith('failover')), JSON.stringify(replicas)).to.deep.equal([]);
    }
  });

  it('while a replica holds a copy, waits as long as the promotion takes and asks again after a Sentinel aborts a failover', () => {
    // The cluster suite's failure: a Sentinel accepted the request, aborted it (no good replica)
    // and may start none of its own for twice the failover timeout; after 20 s the pod started as
    // an empty master, and the replicas copied it. Here the promotion comes after 70 s.
    const outcome = runStartRedis({
      self: 'redis-0',
      sentinels: { 0: [[0, 'refused']], 1: [[0, { master: 'redis-0' }], [70, { master: 'redis-1' }]], 2: [[0, { master: 'redis-0' }], [70, { master: 'redis-1' }]] },
      failoverReplies: { 1: 'OK', 2: 'OK' },
      failoverAbortsAfter: 10,
    });
    expect(outcome.replicaOf).to.equal(host('redis-1'));
    expect(outcome.startedAt).to.be.at.least(70);
    const requests = outcome.calls.filter((call) => call.startsWith('failover'));
    expect(requests.length, requests.join()).to.be.within(5, 8);
    // Never while one is in progress: one request per abort.
    expect(new Set(requests)).to.deep.equal(new Set(['failover 1']));
  });

  it('replicates the master a Sentinel names once one does, even while another still names this pod', () => {
    const outcome = runStartRedis({
      self: 'redis-0',
      sentinels: { 0: [[0, 'refused']], 1: [[0, { master: 'redis-0' }]], 2: [[0, { master: 'redis-0' }], [4, { master: 'redis-2' }]] },
      failoverReplies: { 1: 'OK' },
    });
    expect(outcome.replicaOf).to.equal(host('redis-2'));
    expect(outcome.startedAt).to.be.below(8);
  });

  it('starts as the master when no Sentinel has answered for 30 s after naming this pod', () => {
    const outcome = runStartRedis({
      self: 'redis-0',
      sentinels: { 0: [[0, 'refused']], 1: [[0, { master: 'redis-0' }], [1, 'refused']], 2: [[0, { master: 'redis-0' }], [1, 'refused']] },
      failoverReplies: { 1: 'OK' },
    });
    expect(outcome.replicaOf).to.equal(undefined);
    expect(outcome.startedAt).to.be.at.least(30);
  });
});
