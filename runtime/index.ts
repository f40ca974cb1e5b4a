/**
 * Process plumbing that the gateway and the pet service share, so the two cannot drift: the
 * logger, the crash handlers, the environment validators, the shutdown sequence and the tracing
 * set-up (OpenTelemetry, W3C Trace Context). Nothing here
 * knows about pets, HTTP or gRPC.
 */
export * from './src/crash-handlers';
export * from './src/deadline';
export * from './src/env';
export * from './src/logger';
export * from './src/report-throttle';
export * from './src/secret-files';
export * from './src/service-env';
export * from './src/shutdown';
export * from './src/startup-error';
export * from './src/stray-output';
export * from './src/tracing';
export * from './src/tracing-env';
export * from './src/tracing-options';
