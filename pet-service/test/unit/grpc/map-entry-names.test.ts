import { expect } from 'chai';
import { mapEntryName } from '../../../src/grpc/map-entry-names';

describe('mapEntryName (protoc and protobuf-go naming of map entries)', () => {
  const cases: Array<[string, string]> = [
    ['statuses', 'StatusesEntry'],
    ['quota_dimensions', 'QuotaDimensionsEntry'],
    ['metadata', 'MetadataEntry'],
    ['a__b_', 'ABEntry'],
    ['x2_y', 'X2YEntry'],
  ];
  for (const [field, entry] of cases) {
    it(`names the entry of ${field} ${entry}`, () => expect(mapEntryName(field)).to.equal(entry));
  }
});
