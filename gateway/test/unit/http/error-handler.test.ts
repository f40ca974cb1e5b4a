import { expect } from 'chai';
import { toApiError } from '../../../src/http/error-handler';

/** The error express's router throws for a path parameter it cannot percent-decode. */
function undecodableParameter(): URIError {
  return Object.assign(new URIError("Failed to decode param '%E0'"), { status: 400, statusCode: 400 });
}

describe('toApiError', () => {
  it('names petId when the path it cannot decode is /v1/pets/{petId}', () => {
    expect(toApiError(undecodableParameter(), '/v1/pets/%E0')).to.include({ status: 400, message: 'petId: malformed percent-encoding' });
  });

  it('names the path when another route cannot decode its parameter', () => {
    expect(toApiError(undecodableParameter(), '/admin/bans/%E0')).to.include({ status: 400, message: 'path: malformed percent-encoding' });
  });

  it("keeps a URIError of the gateway's own a 500", () => {
    expect(toApiError(new URIError('URI malformed'), '/v1/pets/1')).to.include({ status: 500, code: 'internal' });
  });
});
