import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { installCrashHandlers } from '../../src/crash-handlers';

// Plain EventEmitter typing: the handlers are looked up by event name.
const emitter = process as NodeJS.EventEmitter;

describe('installCrashHandlers', () => {
  const events = ['uncaughtException', 'unhandledRejection'] as const;
  let before: Record<string, unknown[]>;

  beforeEach(() => {
    before = Object.fromEntries(events.map((event) => [event, emitter.listeners(event)]));
  });

  afterEach(() => {
    for (const event of events) {
      for (const listener of emitter.listeners(event)) {
        if (!before[event]!.includes(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
  });

  for (const [event, kind] of [
    ['uncaughtException', 'uncaught exception'],
    ['unhandledRejection', 'unhandled rejection'],
  ] as const) {
    it(`logs an ${kind} at fatal level, then exits 1`, () => {
      const lines: Array<Record<string, unknown>> = [];
      const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
      const exits: number[] = [];
      installCrashHandlers(pino(sink), (code) => exits.push(code));
      const added = emitter.listeners(event).find((listener) => !before[event]!.includes(listener))!;
      (added as (error: unknown) => void)(new Error('boom'));
      expect(exits).to.deep.equal([1]);
      expect(lines[0]).to.include({ level: 60, msg: kind });
      expect((lines[0]!.err as { message: string }).message).to.equal('boom');
    });
  }
});
