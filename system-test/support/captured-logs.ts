import { Writable } from 'node:stream';
import pino from 'pino';

/** A pino logger whose JSON lines a test reads back, in the order they were written. */
export function capturedLogs(level = 'info'): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
