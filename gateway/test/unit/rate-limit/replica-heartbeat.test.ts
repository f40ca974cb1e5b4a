import { expect } from 'chai';
import { type ReplicaBeat, ReplicaHeartbeat, type ReplicaRegistry } from '../../../src/rate-limit/replica-heartbeat';

const TTL = 15_000;

/** A registry whose answer to each beat the test sets; it records what it was asked. */
class ScriptedRegistry implements ReplicaRegistry {
  reply: ReplicaBeat | Error = { live: 1, ageMs: TTL };
  beats: Array<{ member: string; now: number; ttlMs: number }> = [];
  left: string[] = [];
  /** While set, a beat waits for it. */
  hold: Promise<void> | undefined;

  async beat(member: string, now: number, ttlMs: number): Promise<ReplicaBeat> {
    this.beats.push({ member, now, ttlMs });
    if (this.hold !== undefined) await this.hold;
    if (this.reply instanceof Error) throw this.reply;
    return this.reply;
  }

  async leave(member: string): Promise<void> {
    this.left.push(member);
    if (this.reply instanceof Error) throw this.reply;
  }
}

describe('ReplicaHeartbeat', () => {
  let registry: ScriptedRegistry;
  let now: number;
  let heartbeat: ReplicaHeartbeat;

  beforeEach(() => {
    registry = new ScriptedRegistry();
    now = Date.UTC(2030, 0, 1);
    heartbeat = new ReplicaHeartbeat({ registry, now: () => now, initial: 2, ttlMs: TTL, id: 'me' });
  });

  it('counts the initial number until a beat is answered, and at least 1', async () => {
    expect(heartbeat.replicas).to.equal(2);
    expect(new ReplicaHeartbeat({ registry, now: () => now, initial: 0 }).replicas).to.equal(1);
  });

  it('beats with its id, the injected clock and the time to live, and takes the count of a settled registry', async () => {
    registry.reply = { live: 5, ageMs: TTL };
    await heartbeat.beat();
    expect(registry.beats).to.deep.equal([{ member: 'me', now, ttlMs: TTL }]);
    expect(heartbeat.replicas).to.equal(5);
    registry.reply = { live: 1, ageMs: 10 * TTL };
    await heartbeat.beat();
    expect(heartbeat.replicas, 'a settled registry may lower the count: the others are gone').to.equal(1);
  });

  it('only raises the count from a registry younger than the time to live, which may lack live processes', async () => {
    registry.reply = { live: 3, ageMs: TTL };
    await heartbeat.beat();
    registry.reply = { live: 1, ageMs: 0 };
    await heartbeat.beat();
    expect(heartbeat.replicas, 'Redis restarted: this is the first to beat again').to.equal(3);
    registry.reply = { live: 4, ageMs: TTL - 1 };
    await heartbeat.beat();
    expect(heartbeat.replicas).to.equal(4);
    registry.reply = { live: 2, ageMs: TTL };
    await heartbeat.beat();
    expect(heartbeat.replicas).to.equal(2);
  });

  it('keeps the last count while Redis does not answer', async () => {
    registry.reply = { live: 3, ageMs: TTL };
    await heartbeat.beat();
    registry.reply = new Error('Connection is closed.');
    await heartbeat.beat();
    expect(heartbeat.replicas).to.equal(3);
  });

  it('skips a beat asked for while one is in flight, so a slow Redis is not sent a queue of them', async () => {
    let release = (): void => undefined;
    registry.hold = new Promise((resolve) => (release = resolve));
    const first = heartbeat.beat();
    await heartbeat.beat();
    expect(registry.beats).to.have.length(1);
    release();
    await first;
    registry.hold = undefined;
    await heartbeat.beat();
    expect(registry.beats).to.have.length(2);
  });

  it('beats at once on start, leaves the registry on stop, and survives a registry it cannot leave', async () => {
    heartbeat.start();
    heartbeat.start();
    expect(registry.beats, 'one beat, one timer').to.have.length(1);
    registry.reply = new Error('Connection is closed.');
    await heartbeat.stop();
    expect(registry.left).to.deep.equal(['me']);
  });

  it('is a new member after a restart unless given an id', () => {
    const a = new ReplicaHeartbeat({ registry, now: () => now, initial: 1 });
    const b = new ReplicaHeartbeat({ registry, now: () => now, initial: 1 });
    void a.beat();
    void b.beat();
    expect(new Set(registry.beats.map((beat) => beat.member)).size).to.equal(2);
  });
});
