// The same packages from a CommonJS module (nodenext): their `require` declarations.
import client = require('@petstore/client');
import proto = require('@petstore/proto');

export const make = (baseUrl: string): client.PetstoreClient<'string'> => createClient(baseUrl);
const createClient = (baseUrl: string) => client.createPetstoreClient({ baseUrl, apiKey: 'k', int64: 'string' });
export const status: proto.PetStatus = proto.PetStatus.PET_STATUS_SOLD;
export const isError = (error: unknown): error is client.PetstoreError => error instanceof client.PetstoreError;
