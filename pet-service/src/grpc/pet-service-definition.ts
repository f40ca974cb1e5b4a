/**
 * The PetService definition as the server serves it: the generated one, with each request
 * decoded strictly and tolerantly (see {@link tolerantDeserialize}) and ListPets' response
 * written by its own serializer.
 */
import {
  CreatePetRequest,
  type DecodableMessage,
  DeletePetRequest,
  GetPetRequest,
  ListPetsRequest,
  PetServiceService,
  strictUtf8Decoder,
  UpdatePetRequest,
} from '@petstore/proto';
import { serializeListPetsResponse } from './list-pets-serializer';
import { tolerantDeserialize } from './undecodable-request';

/** The request message of each method: its string fields are decoded strictly. */
const REQUEST_TYPES: { readonly [Method in keyof typeof PetServiceService]: DecodableMessage<unknown> } = {
  listPets: ListPetsRequest,
  createPet: CreatePetRequest,
  getPet: GetPetRequest,
  updatePet: UpdatePetRequest,
  deletePet: DeletePetRequest,
};

/** The definition to pass to `Server.addService` with the pet service's handlers. */
export function servedPetServiceDefinition(): typeof PetServiceService {
  return Object.fromEntries(
    Object.entries(PetServiceService).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: tolerantDeserialize(strictUtf8Decoder(REQUEST_TYPES[name as keyof typeof PetServiceService])),
        ...(name === 'listPets' ? { responseSerialize: serializeListPetsResponse } : {}),
      },
    ]),
  ) as unknown as typeof PetServiceService;
}
