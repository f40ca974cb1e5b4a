import { credentials, loadPackageDefinition, Metadata, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { fieldViolationOf, PET_SERVICE_NAME, PetServiceClient } from '@petstore/proto';
import { expect } from 'chai';
import { FileDescriptorProto, type IDescriptorProto, type IFileDescriptorProto } from 'protobufjs/ext/descriptor';
import { mapEntryName } from '../../src/grpc/map-entry-names';
import { MemoryPetRepository } from '../../src/store/memory-pet-repository';
import { createServer, type RunningServer } from '../../src/server';

/** The v1 reflection stream as grpc-js loads it from the protos @grpc/reflection ships. */
interface ReflectionStream {
  on(event: 'data', listener: (response: ReflectionResponse) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  write(request: Record<string, string>): boolean;
  end(): void;
}
interface ReflectionResponse {
  listServicesResponse?: { service: Array<{ name: string }> };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}
interface ReflectionStub {
  ServerReflectionInfo(): ReflectionStream;
  close(): void;
}

const REFLECTION_PROTO_ROOT = require.resolve('@grpc/reflection/package.json').replace(/package\.json$/, 'build/proto');

/**
 * A reflection client as grpcurl uses one: grpc.reflection.v1 over a real channel, each request
 * on its own stream, file descriptors decoded with protobufjs's descriptor types.
 */
function reflectionClient(address: string): { ask(request: Record<string, string>): Promise<ReflectionResponse>; close(): void } {
  const definition = loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [REFLECTION_PROTO_ROOT] });
  const loaded = loadPackageDefinition(definition) as never as {
    grpc: { reflection: { v1: { ServerReflection: new (address: string, creds: unknown) => ReflectionStub } } };
  };
  const stub = new loaded.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
  return {
    ask: (request) =>
      new Promise((resolve, reject) => {
        const stream = stub.ServerReflectionInfo();
        stream.on('data', (response) => {
          resolve(response);
          stream.end();
        });
        stream.on('error', reject);
        stream.write(request);
      }),
    close: () => stub.close(),
  };
}

/** The files reflection returns for a symbol, decoded; fails on reflection's error response. */
async function filesContaining(client: ReturnType<typeof reflectionClient>, symbol: string): Promise<IFileDescriptorProto[]> {
  const response = await client.ask({ fileContainingSymbol: symbol });
  expect(response.errorResponse, `reflection could not resolve ${symbol}`).to.equal(undefined);
  return response.fileDescriptorResponse!.fileDescriptorProto.map((bytes) => FileDescriptorProto.decode(bytes) as IFileDescriptorProto);
}

/** A message's field names, found by its fully-qualified name among the files. */
function fieldNames(files: IFileDescriptorProto[], fullName: string): string[] {
  const message = files
    .flatMap((file) => (file.messageType ?? []).map((type): [string, IDescriptorProto] => [`${file.package}.${type.name}`, type]))
    .find(([name]) => name === fullName)?.[1];
  expect(message, `${fullName} is not in the reflected files`).to.not.equal(undefined);
  return (message!.field ?? []).map((field) => field.name!);
}

describe('pet service server reflection (grpc.reflection.v1, real server on port 0)', () => {
  let server: RunningServer;
  let reflection: ReturnType<typeof reflectionClient>;

  beforeEach(async () => {
    server = await createServer({ host: '127.0.0.1', port: 0, repository: new MemoryPetRepository(), pageTokenSecret: 's' });
    reflection = reflectionClient(`127.0.0.1:${server.port}`);
  });

  afterEach(async () => {
    reflection.close();
    await server.shutdown();
  });

  it('lists the pet service and the health service', async () => {
    const response = await reflection.ask({ listServices: '*' });
    const services = response.listServicesResponse!.service.map((service) => service.name);
    expect(services).to.include.members([PET_SERVICE_NAME, 'grpc.health.v1.Health']);
  });

  it("serves the .proto's snake_case field names, as grpcurl -d needs them", async () => {
    const files = await filesContaining(reflection, PET_SERVICE_NAME);
    expect(fieldNames(files, 'petstore.v1.ListPetsRequest')).to.include.members(['page_size', 'page_token', 'status']);
    expect(fieldNames(files, 'petstore.v1.ListPetsResponse')).to.include.members(['pets', 'next_page_token']);
    expect(fieldNames(files, 'petstore.v1.CreatePetRequest')).to.include('category_id');
    expect(fieldNames(files, 'petstore.v1.Pet')).to.include('category_id').and.not.include('categoryId');
  });

  it('names in its errors the very field that reflection describes', async () => {
    const client = new PetServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const error = await new Promise<ServiceError>((resolve) =>
      client.createPet({ name: 'Rex', categoryId: '0', status: 0 }, new Metadata(), (failure) => resolve(failure!)),
    );
    client.close();
    const violated = fieldViolationOf(error.metadata)?.field;
    expect(violated).to.equal('category_id');
    expect(fieldNames(await filesContaining(reflection, 'petstore.v1.CreatePetRequest'), 'petstore.v1.CreatePetRequest')).to.include(violated);
  });

  it('names every map entry message as protoc does, which protobuf-go (grpcurl) insists on', async () => {
    const checked: string[] = [];
    for (const symbol of [PET_SERVICE_NAME, 'grpc.health.v1.Health']) {
      for (const file of await filesContaining(reflection, symbol)) {
        const visit = (message: IDescriptorProto, scope: string): void => {
          for (const entry of (message.nestedType ?? []).filter((type) => type.options?.mapEntry === true)) {
            const field = message.field?.find((candidate) => candidate.typeName?.split('.').at(-1) === entry.name);
            checked.push(`${scope}.${message.name}.${field?.name}`);
            expect(entry.name, `map field ${field?.name} of ${message.name}`).to.equal(mapEntryName(field?.name ?? ''));
          }
          for (const nested of message.nestedType ?? []) visit(nested, `${scope}.${message.name}`);
        };
        for (const message of file.messageType ?? []) visit(message, file.package ?? '');
      }
    }
    expect(checked, 'map fields checked').to.include.members(['grpc.health.v1.HealthListResponse.statuses']);
  });

  it('resolves google.rpc.BadRequest, with every file it imports, so that grpcurl prints field violations (issue 40)', async () => {
    const files = await filesContaining(reflection, 'google.rpc.BadRequest');
    const errorDetails = files.find((file) => file.package === 'google.rpc');
    expect(errorDetails, 'the file of google.rpc').to.not.equal(undefined);
    expect(fieldNames(files, 'google.rpc.BadRequest')).to.deep.equal(['field_violations']);
    // Every import resolves by its name, as grpcurl asks for them.
    for (const dependency of errorDetails!.dependency ?? []) {
      const response = await reflection.ask({ fileByFilename: dependency });
      expect(response.errorResponse, dependency).to.equal(undefined);
      const names = response.fileDescriptorResponse!.fileDescriptorProto.map((bytes) => (FileDescriptorProto.decode(bytes) as IFileDescriptorProto).name);
      expect(names, dependency).to.include(dependency);
    }
    expect(errorDetails!.dependency, 'the file of google.protobuf.Duration, which RetryInfo uses').to.have.length(1);
  });

  it('resolves grpc.health.v1.Health to its methods and messages', async () => {
    const files = await filesContaining(reflection, 'grpc.health.v1.Health');
    const health = files.flatMap((file) => (file.package === 'grpc.health.v1' ? (file.service ?? []) : [])).find((service) => service.name === 'Health');
    expect(health?.method?.map((method) => method.name)).to.include.members(['Check', 'Watch']);
    expect(fieldNames(files, 'grpc.health.v1.HealthCheckRequest')).to.deep.equal(['service']);
  });
});
