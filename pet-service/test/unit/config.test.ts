import { expect } from 'chai';
import { parseConfig } from '../../src/config';

describe('pet-service config', () => {
  it('defaults to the in-memory store on port 50051', () => {
    expect(parseConfig({})).to.include({ port: 50051, mongodbUri: undefined, mongodbDatabase: 'petstore' });
  });

  it('accepts port 0 and a MongoDB URI', () => {
    expect(parseConfig({ PET_SERVICE_PORT: '0', MONGODB_URI: 'mongodb://x', MONGODB_DB: 'd' })).to.include({
      port: 0,
      mongodbUri: 'mongodb://x',
      mongodbDatabase: 'd',
    });
  });

  it('names each bad variable', () => {
    expect(() => parseConfig({ PET_SERVICE_PORT: '70000' })).to.throw(/PET_SERVICE_PORT/);
    expect(() => parseConfig({ PET_SERVICE_PORT: 'http' })).to.throw(/PET_SERVICE_PORT/);
    expect(() => parseConfig({ MONGODB_TIMEOUT_MS: '0' })).to.throw(/MONGODB_TIMEOUT_MS/);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(parseConfig({}))).to.equal(true);
  });
});
