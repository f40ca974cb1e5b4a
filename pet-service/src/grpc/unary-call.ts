/**
 * The wrapper every PetService RPC runs in: it times and counts each call, logs it at a level
 * that suits its outcome, refuses an undecodable request, maps anything thrown to a gRPC status
 * and answers nothing to a call that was cancelled.
 */
import { type Metadata, status as Status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { REQUEST_ID_METADATA, REQUEST_ID_PATTERN } from '@petstore/proto';
import type { Logger } from 'pino';
import type { PetServiceMetrics } from '../observability/metrics';
import { PetServiceError } from '../pets/pet-service-error';
import { Undecodable } from './undecodable-request';

export interface UnaryCallDependencies {
  readonly logger: Logger;
  readonly metrics: PetServiceMetrics;
  /**
   * Aborted when a forced shutdown cancels the calls still running: their store operations then
   * fail as the store closes, possibly before grpc-js has marked each call cancelled.
   */
  readonly forcedShutdown: AbortSignal;
  /**
   * A call that succeeds in less than this many ms is logged at debug, not info: the line is a
   * large share of a fast call's CPU, and the gateway already logs every request with the same
   * request id. 0 logs every call at info.
   */
  readonly slowCallMs: number;
  /** Monotonic time in ns (`process.hrtime.bigint`); calls are timed with it. */
  readonly clock: () => bigint;
}

/** Turns a method's handler into a grpc-js unary handler. */
export type UnaryCall = <Req, Res>(
  method: string,
  handle: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>,
) => (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/** Makes the wrapper; `method` is the RPC's name as metrics and logs give it (`ListPets`). */
export function createUnaryCall({ logger, metrics, forcedShutdown, slowCallMs, clock }: UnaryCallDependencies): UnaryCall {
  return <Req, Res>(method: string, handle: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res>) => {
    // One label object per status code, made once rather than twice per call.
    const labels = new Map<Status, { method: string; code: string }>();
    const labelsOf = (code: Status) => {
      let found = labels.get(code);
      if (found === undefined) labels.set(code, (found = { method, code: Status[code]! }));
      return found;
    };
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      const start = clock();
      const finish = (code: Status, error?: unknown): void => {
        const ms = Number(clock() - start) / 1e6;
        const callLabels = labelsOf(code);
        metrics.grpcCalls.inc(callLabels);
        metrics.grpcCallSeconds.observe(callLabels, ms / 1000);
        // The line is built only when some level will write it.
        if (code === Status.INTERNAL || code === Status.UNKNOWN) {
          logger.error({ ...callLine(method, callLabels.code, ms, call.metadata), err: error }, 'grpc call failed');
        } else if (code !== Status.OK || ms >= slowCallMs) {
          logger.info(callLine(method, callLabels.code, ms, call.metadata), 'grpc call');
        } else if (logger.isLevelEnabled('debug')) {
          logger.debug(callLine(method, callLabels.code, ms, call.metadata), 'grpc call');
        }
      };
      const request: Req = call.request;
      const handled =
        (request as unknown) instanceof Undecodable
          ? Promise.reject(PetServiceError.invalidArgument('request', (request as Undecodable).problem))
          : handle(request, call);
      handled.then(
        (response) => {
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          finish(Status.OK);
          callback(null, response);
        },
        (error: unknown) => {
          // Cancelled by its client or by a forced shutdown, which may close the store under it:
          // what the store operation then met is no fault of the service.
          if (call.cancelled || forcedShutdown.aborted) return finish(Status.CANCELLED);
          const serviceError = PetServiceError.toServiceError(error);
          finish(serviceError.code!, error);
          callback(serviceError);
        },
      );
    };
  };
}

function callLine(method: string, code: string, duration: number, metadata: Metadata) {
  return { method, code, duration, requestId: requestIdOf(metadata) };
}

/** The caller's request id when it is sane by the gateway's rule; anything else is not logged. */
function requestIdOf(metadata: Metadata): string | undefined {
  const value = metadata.get(REQUEST_ID_METADATA)[0];
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value) ? value : undefined;
}
