import { format } from 'node:util';
import type { Logger } from 'pino';
import { createReportThrottle } from './report-throttle';

/** Shortest time between two log lines of one kind of stray output. */
export const STRAY_OUTPUT_REPORT_MS = 60_000;

/** The console methods libraries print with, and the level each is logged at. */
const CONSOLE_LEVELS = { error: 'error', warn: 'warn', info: 'info', log: 'info', debug: 'debug', trace: 'debug' } as const;

/** What {@link logStrayOutput} takes over: the process's console and its warnings. */
export interface StrayOutputSources {
  readonly console: Pick<Console, keyof typeof CONSOLE_LEVELS>;
  readonly process: Pick<NodeJS.EventEmitter, 'on' | 'listeners' | 'removeListener'>;
}

/**
 * Turns what libraries print by themselves into log lines, so that a service writes JSON lines and
 * nothing else: console calls (ioredis's warnings, grpc-js's default logger, a library's last-resort
 * error handler) and process warnings (deprecations, which Node prints as text on stderr instead of
 * the listeners it had). Each line keeps its text as `msg`, with `source` (`console` or `process`);
 * one kind of line (the same text, digits aside) is logged at most once per
 * {@link STRAY_OUTPUT_REPORT_MS}, with the `occurrences` it stands for.
 */
export function logStrayOutput(sources: StrayOutputSources, logger: Logger, now: () => number = () => performance.now()): void {
  const pass = createReportThrottle({ intervalMs: STRAY_OUTPUT_REPORT_MS, now });
  const report = (level: 'error' | 'warn' | 'info' | 'debug', fields: Record<string, unknown>, text: string): void => {
    if (!logger.isLevelEnabled(level)) return;
    const occurrences = pass(`${level} ${text.slice(0, 200).replace(/[0-9]+/g, '#')}`);
    if (occurrences !== undefined) logger[level]({ ...fields, occurrences }, text);
  };
  for (const [method, level] of Object.entries(CONSOLE_LEVELS) as Array<[keyof typeof CONSOLE_LEVELS, (typeof CONSOLE_LEVELS)[keyof typeof CONSOLE_LEVELS]]>) {
    sources.console[method] = (...args: unknown[]) => report(level, { source: 'console' }, format(...args));
  }
  for (const listener of sources.process.listeners('warning')) sources.process.removeListener('warning', listener as (...args: unknown[]) => void);
  sources.process.on('warning', (warning: Error & { code?: string }) =>
    report('warn', { source: 'process', warning: { name: warning.name, ...(warning.code === undefined ? {} : { code: warning.code }) } }, warning.message),
  );
}
