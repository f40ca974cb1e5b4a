/**
 * Floor variant m: node:http and one ListPets per request on grpc-js's own `Channel`
 * (`createCall`), with `createPetServiceClient`'s channel options (round_robin, keepalive,
 * reconnect backoff), the request encoded and the response decoded by the generated service
 * definition, a deadline per call; no generated Client, no interceptors, no retries but one of a
 * stream refused as its connection is recycled. The floor of grpc-js under variant b.
 */
import { Channel, credentials, Metadata, status as Status } from '@grpc/grpc-js';
import { defaultChannelOptions, type ListPetsRequest, type ListPetsResponse, PetServiceService } from '@petstore/proto';
import { DEADLINE_MS, PET_SERVICE_ADDR, serveListPets } from './variant-server';

const channel = new Channel(PET_SERVICE_ADDR, credentials.createInsecure(), defaultChannelOptions());
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
