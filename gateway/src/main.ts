import { join } from 'node:path';
import { ApiKeyStore } from './api-keys';
import { createApp } from './app';
import { type GatewayConfig, parseConfig } from './config';
import { listen } from './http-server';
import { createPetClient } from './pet-client';

const DEMO_KEYS_FILE = join(__dirname, '..', 'config', 'demo-keys.yaml');

function loadSettings(): { config: GatewayConfig; apiKeys: ApiKeyStore } {
  try {
    const config = parseConfig(process.env, DEMO_KEYS_FILE);
    return { config, apiKeys: ApiKeyStore.load(config.apiKeysFile) };
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

async function main(): Promise<void> {
  const { config, apiKeys } = loadSettings();
  const petClient = createPetClient({ target: config.petServiceAddress, timeoutMs: config.petServiceTimeoutMs });
  const app = createApp({ petClient, apiKeys });
  const { server, port } = await listen(app, config.host, config.port);
  console.log(JSON.stringify({ msg: 'gateway listening', port, petService: config.petServiceAddress }));

  const stop = (): void => {
    server.close(() => {
      petClient.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => {
  console.error('gateway failed to start:', error);
  process.exit(1);
});
