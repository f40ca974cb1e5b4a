// Public types of this package use Node's (Buffer for bytes fields, http2 through grpc-js): a
// consumer's type check needs @types/node, a dependency, even under `"types": []`.
/// <reference types="node" preserve="true" />
/**
 * The one generated copy of the petstore.v1 contract, shared by the pet service and the gateway.
 * Regenerate with `npm run generate`; never edit `gen/` by hand (CI fails on a stale copy).
 */
export * from './gen/petstore/v1/pet_service';
export * from './contract';
export * from './metadata';
export * from './field-violation';
export * from './error-details';
export * from './pet-service-client';
export * from './certificate-files';

import { dirname, join } from 'node:path';

/**
 * Directory holding the .proto sources, for runtime loaders such as server reflection. Resolved
 * through the package, so it holds when this module is bundled into a service.
 */
export const PROTO_ROOT = dirname(require.resolve('@petstore/proto/package.json'));
/** The service's .proto file, relative to {@link PROTO_ROOT}. */
export const PET_SERVICE_PROTO = join('petstore', 'v1', 'pet_service.proto');
export * from './strict-utf8';
export { createUnaryTransport, DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, DEFAULT_MIN_RESOLUTION_INTERVAL_MS, DEFAULT_RESOLUTION_REFRESH_MS } from './transport/unary-transport';
export type { BackoffOptions, ConnectionState, Lookup, TransportState, UnaryCallOptions, UnaryTransport, UnaryTransportOptions } from './transport/unary-transport';
export { GRPC_CONNECTION_BACKOFF } from './transport/connection-backoff';
export { InvalidTargetError } from './transport/target';
export { environmentProxy, NO_PROXY_VARIABLES, PROXY_VARIABLES, ProxySettingError, type ProxySettings } from './transport/http-connect-proxy';
