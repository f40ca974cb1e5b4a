import type { components, operations } from './gen/openapi';

type Schemas = components['schemas'];

/** How the client hands out int64 values (ids, category ids): never as a possibly rounded number. */
export type Int64Mode = 'bigint' | 'string';
/** An int64 as the chosen {@link Int64Mode} gives it: a bigint, or its plain decimal text. */
export type Int64<Mode extends Int64Mode> = Mode extends 'string' ? string : bigint;

export type PetStatus = Schemas['PetStatus'];

/** A pet as the gateway returns it, with its int64 fields in the chosen mode. */
export type Pet<Mode extends Int64Mode = 'bigint'> = Omit<Schemas['Pet'], 'id' | 'categoryId'> & {
  id: Int64<Mode>;
  categoryId: Int64<Mode>;
};

/**
 * A pet to create. `categoryId` may be a bigint, a decimal string, or a number that is a safe
 * integer (a larger number may already have been rounded, so it is refused before sending).
 */
export type NewPet = Omit<Schemas['NewPet'], 'categoryId' | 'status'> & {
  categoryId: bigint | string | number;
  status?: PetStatus;
};

/**
 * The fields of a pet to change (a JSON Merge Patch): those given change, the others keep their
 * values. `categoryId` as in {@link NewPet}; at least one field.
 */
export type PetChange = Partial<Omit<Schemas['PetPatch'], 'categoryId'>> & {
  categoryId?: bigint | string | number;
};

/** A pet and its entity tag (`ETag`, quotes included), which `ifMatch` takes back. */
export interface TaggedPet<Mode extends Int64Mode = 'bigint'> {
  readonly pet: Pet<Mode>;
  readonly etag: string;
}

/** What `listPets` filters and pages by; the cursor is the client's business (it follows `Link`). */
export type ListPetsQuery = Omit<NonNullable<operations['listPets']['parameters']['query']>, 'cursor'>;

/**
 * The Error body's codes (the gateway's closed set), plus two the client itself reports:
 * `network_error` when no response arrived (connection refused or cut) after every retry, and
 * `unexpected_response` for a response outside the contract (not JSON, wrong shape, a `Link` to
 * another origin).
 */
export type ErrorCode = Schemas['Error']['code'] | 'network_error' | 'unexpected_response';
