import { ApiError } from '../http/api-error';

/** How an exchange with an upstream failed before its response began. */
export type UpstreamFailure = 'timeout' | 'failed';

const ANSWERS: Readonly<Record<UpstreamFailure, ApiError>> = {
  timeout: new ApiError(504, 'gateway_timeout', 'the upstream service did not answer in time'),
  // Refused, reset, unresolvable or unparsable alike: the upstream, not the client, is at fault,
  // and 503 `service_unavailable` already means the pet service.
  failed: new ApiError(502, 'bad_gateway', 'the upstream service failed to answer'),
};

/** The gateway's answer to a failed upstream exchange: the one table of this boundary. */
export function upstreamFailureToHttp(failure: UpstreamFailure): ApiError {
  return ANSWERS[failure];
}
