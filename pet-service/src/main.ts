import { parseConfig, type PetServiceConfig } from './config';
import { MemoryPetRepository } from './memory-pet-repository';
import { MongoPetRepository } from './mongo-pet-repository';
import type { PetRepository } from './pet-repository';
import { createServer } from './server';

async function openRepository(config: PetServiceConfig): Promise<PetRepository> {
  if (config.mongodbUri === undefined) return new MemoryPetRepository();
  return MongoPetRepository.connect({
    uri: config.mongodbUri,
    database: config.mongodbDatabase,
    timeoutMs: config.mongodbTimeoutMs,
  });
}

async function main(): Promise<void> {
  let config: PetServiceConfig;
  try {
    config = parseConfig(process.env);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
  const repository = await openRepository(config);
  const server = await createServer({ ...config, repository });
  console.log(JSON.stringify({ msg: 'pet service listening', port: server.port, store: config.mongodbUri ? 'mongodb' : 'memory' }));

  const stop = (): void => {
    server.shutdown().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => {
  console.error('pet service failed to start:', error);
  process.exit(1);
});
