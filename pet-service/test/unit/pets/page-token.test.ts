import { status as Status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { PAGE_TOKEN_PATTERN } from '@petstore/proto';
import { PageTokenCodec } from '../../../src/pets/page-token';
import { PetServiceError } from '../../../src/pets/pet-service-error';

describe('PageTokenCodec', () => {
  const codec = new PageTokenCodec('secret');

  function expectInvalid(decode: () => unknown): void {
    expect(decode).to.throw(PetServiceError).with.property('code', Status.INVALID_ARGUMENT);
  }

  it('round-trips a cursor, int64 maximum included', () => {
    for (const cursor of [
      { afterId: 1n, status: undefined },
      { afterId: 2n ** 63n - 1n, status: 'sold' as const },
    ]) {
      expect(codec.decode(codec.encode(cursor), cursor.status)).to.deep.equal(cursor);
    }
  });

  it('issues tokens of the shape the contract declares, shortest and longest payload alike', () => {
    for (const cursor of [
      { afterId: 1n, status: undefined },
      { afterId: 1n, status: 'sold' as const },
      { afterId: 2n ** 63n - 1n, status: 'available' as const },
    ]) {
      expect(codec.encode(cursor)).to.match(PAGE_TOKEN_PATTERN);
    }
    expect(codec.encode({ afterId: 1n, status: undefined })).to.have.length(27);
    expect(codec.encode({ afterId: 2n ** 63n - 1n, status: 'available' })).to.have.length(59);
  });

  it('rejects a token issued for another filter', () => {
    expectInvalid(() => codec.decode(codec.encode({ afterId: 5n, status: 'sold' }), undefined));
    expectInvalid(() => codec.decode(codec.encode({ afterId: 5n, status: undefined }), 'pending'));
  });

  it('rejects tokens signed with another secret, edited, truncated or not base64url', () => {
    const token = codec.encode({ afterId: 5n, status: undefined });
    expectInvalid(() => new PageTokenCodec('other').decode(token, undefined));
    const edited = Buffer.from(token, 'base64url');
    edited[3] = edited[3]! ^ 0x01;
    expectInvalid(() => codec.decode(edited.toString('base64url'), undefined));
    expectInvalid(() => codec.decode(token.slice(0, -2), undefined));
    expectInvalid(() => codec.decode(`${token}=`, undefined));
    expectInvalid(() => codec.decode('', undefined));
    expectInvalid(() => codec.decode('%%%%', undefined));
  });

  it('rejects a well-signed payload that is not a cursor', () => {
    const forged = new PageTokenCodec('secret') as unknown as { mac(payload: Buffer): Buffer };
    const payload = Buffer.from('v1.all.0');
    expectInvalid(() => codec.decode(Buffer.concat([payload, forged.mac(payload)]).toString('base64url'), undefined));
  });
});
