import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { logStrayOutput, STRAY_OUTPUT_REPORT_MS } from '../../src/stray-output';

/** A logger writing into `lines`, parsed. */
function capture(lines: Array<Record<string, unknown>>, level = 'debug'): pino.Logger {
  const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(JSON.parse(chunk.toString())), done()) });
  return pino({ level }, sink);
}

describe('logStrayOutput', () => {
  function setUp(level = 'debug'): { lines: Array<Record<string, unknown>>; console: Console; emitter: EventEmitter; advance(ms: number): void } {
    const lines: Array<Record<string, unknown>> = [];
    const fakeConsole = { error() {}, warn() {}, info() {}, log() {}, debug() {}, trace() {} } as unknown as Console;
    const emitter = new EventEmitter();
    let now = 0;
    logStrayOutput({ console: fakeConsole, process: emitter }, capture(lines, level), () => now);
    return { lines, console: fakeConsole, emitter, advance: (ms) => (now += ms) };
  }

  it('logs console calls as JSON lines at their level, formatted as console would, the text as msg', () => {
    const { lines, console } = setUp();
    console.error('[ioredis] Unhandled error event:', 'Error: getaddrinfo ENOTFOUND redis-1\n    at stack');
    console.warn('[WARN] Redis server does not require a password, but a password was supplied.');
    console.log('%d clients', 3);
    console.debug('D tracing');
    expect(lines.map(({ level, source, msg, occurrences }) => ({ level, source, msg, occurrences }))).to.deep.equal([
      { level: 50, source: 'console', msg: '[ioredis] Unhandled error event: Error: getaddrinfo ENOTFOUND redis-1\n    at stack', occurrences: 1 },
      { level: 40, source: 'console', msg: '[WARN] Redis server does not require a password, but a password was supplied.', occurrences: 1 },
      { level: 30, source: 'console', msg: '3 clients', occurrences: 1 },
      { level: 20, source: 'console', msg: 'D tracing', occurrences: 1 },
    ]);
  });

  it('logs one kind of line (digits aside) at most once a minute, then with the occurrences held back', () => {
    const { lines, console, advance } = setUp();
    for (let port = 26379; port < 26389; port += 1) console.error(`connect ECONNREFUSED 127.0.0.1:${port}`);
    console.error('another line');
    advance(STRAY_OUTPUT_REPORT_MS);
    console.error('connect ECONNREFUSED 127.0.0.1:1');
    expect(lines.map(({ msg, occurrences }) => [msg, occurrences])).to.deep.equal([
      ['connect ECONNREFUSED 127.0.0.1:26379', 1],
      ['another line', 1],
      ['connect ECONNREFUSED 127.0.0.1:1', 10],
    ]);
  });

  it('drops below the logger level, without counting against the rate', () => {
    const { lines, console } = setUp('info');
    console.debug('D quiet');
    console.info('I said');
    expect(lines.map(({ msg }) => msg)).to.deep.equal(['I said']);
  });

  it('takes process warnings over from Node’s printer, as warn lines with their name and code', () => {
    const printed: unknown[] = [];
    const emitter = new EventEmitter();
    emitter.on('warning', (warning) => printed.push(warning));
    const lines: Array<Record<string, unknown>> = [];
    logStrayOutput({ console: { ...console }, process: emitter }, capture(lines), () => 0);
    const warning = Object.assign(new Error('Buffer() is deprecated'), { name: 'DeprecationWarning', code: 'DEP0005' });
    emitter.emit('warning', warning);
    expect(printed).to.deep.equal([]);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 40, source: 'process', msg: 'Buffer() is deprecated' });
    expect(lines[0]!.warning).to.deep.equal({ name: 'DeprecationWarning', code: 'DEP0005' });
  });
});
