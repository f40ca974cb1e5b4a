import { expect } from 'chai';
import type { Request, Response } from 'express';
import { ApiError } from '../../../src/http/api-error';
import type { PetClient } from '../../../src/pet-service-client/pet-client';
import { createPetsRouter } from '../../../src/http/pets-router';

/** What the router hands on for a GET of `url`: the error it passes out, or undefined. */
function routeError(url: string): Promise<unknown> {
  const router = createPetsRouter({ petClient: {} as PetClient, now: () => 0 });
  const request = { method: 'GET', url, headers: {} } as Request;
  return new Promise((resolve) => router(request, {} as Response, resolve));
}

describe('pets router', () => {
  it('names petId when the router cannot percent-decode it', async () => {
    const error = await routeError('/v1/pets/%E0');
    expect(error).to.be.instanceOf(ApiError).and.include({ status: 400, message: 'petId: malformed percent-encoding' });
  });

  it('leaves a path no route matches to the next handler', async () => {
    expect(await routeError('/v1/pets/%E0/owner')).to.equal(undefined);
  });
});
