/**
 * Floor variant m: node:http and one ListPets per request on grpc-js's own `Channel`
 * (`createCall`), with the channel options `createPetServiceClient` gave grpc-js before it had a
 * transport of its own (round_robin, keepalive, reconnect backoff), the request encoded and the
 * response decoded by the generated service definition, a deadline per call; no generated Client,
 * no interceptors, no retries but one of a stream refused as its connection is recycled. The floor
 * of grpc-js, kept for comparison with the client's own transport (b).
 */
import { Channel, type ChannelOptions, credentials, Metadata, status as Status } from '@grpc/grpc-js';
import { type ListPetsRequest, type ListPetsResponse, PetServiceService } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

const CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  'grpc.dns_min_time_between_resolutions_ms': 10_000,
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1000,
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
};

const channel = new Channel(PET_SERVICE_ADDR, credentials.createInsecure(), CHANNEL_OPTIONS);
const { path, requestSerialize, responseDeserialize } = PetServiceService.listPets;

/** One unary call: the status settles it, with the one response if OK. */
function call(request: ListPetsRequest): Promise<ListPetsResponse> {
  return new Promise((resolve, reject) => {
    const stream = channel.createCall(path, Date.now() + DEADLINE_MS, undefined, null, undefined);
    let response: ListPetsResponse | undefined;
    stream.start(new Metadata(), {
      onReceiveMetadata: () => undefined,
      onReceiveMessage: (bytes: Buffer) => (response = responseDeserialize(bytes)),
      onReceiveStatus: ({ code, details }) => {
        if (code === Status.OK && response !== undefined) resolve(response);
        else reject(Object.assign(new Error(details), { code, details }));
      },
    });
    stream.startRead();
    stream.sendMessageWithContext({}, requestSerialize(request));
    stream.halfClose();
  });
}

/** RFC 9113 section 8.7: the server processed nothing of a refused stream, so it can be sent again. */
const refused = (error: { code: Status; details: string }) => error.code === Status.UNAVAILABLE && /NGHTTP2_REFUSED_STREAM|^Stream refused by server$/.test(error.details);

function listPets(request: ListPetsRequest): Promise<ListPetsResponse> {
  return call(request).catch((error: { code: Status; details: string }) => {
    if (!refused(error)) throw error;
    return call(request);
  });
}

serveListPets('floor m (node:http + grpc-js Channel)', listPets, () => channel.close());
