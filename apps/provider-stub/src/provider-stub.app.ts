import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { runMigrations } from '../../payments-api/src/database/run-migrations';
import { PROVIDER_STUB_NAME } from './provider-health.controller';
import { PROVIDER_STUB_CONNECTION, PROVIDER_STUB_SCHEMA } from './provider-stub.connection';
import { type ProviderStubConfig, ProviderStubModule } from './provider-stub.module';

/** Builds the stub app and brings its schema up to date (not listening yet). */
export async function createProviderStub(config: ProviderStubConfig): Promise<INestApplication> {
  const app = await NestFactory.create(ProviderStubModule.register(config), {
    logger: ['error', 'warn'],
  });
  await runMigrations(app.get<DataSource>(getDataSourceToken(PROVIDER_STUB_CONNECTION)), {
    schema: PROVIDER_STUB_SCHEMA,
  });
  return app;
}

/**
 * Starts the stub on `port`. When another demo process's stub holds the port already, this one
 * listens on a free port of its own instead: sharing that stub would send this process's charges
 * to that process's database, and leave it unable to take payments once that process is gone.
 * The stubs of one database share the schema `provider_stub`, so they act as one card processor.
 */
export async function startProviderStub(
  config: ProviderStubConfig & { port: number },
): Promise<{ url: string; app: INestApplication }> {
  const logger = new Logger('ProviderStub');
  const app = await createProviderStub(config);
  try {
    await app.listen(config.port, '127.0.0.1');
  } catch (error) {
    await app.close();
    if (
      (error as { code?: string }).code !== 'EADDRINUSE' ||
      !(await isProviderStub(`http://127.0.0.1:${config.port}`))
    )
      throw error;
    const own = await createProviderStub(config);
    await own.listen(0, '127.0.0.1');
    const url = listeningUrl(own);
    // Said as a warning: until the API starts, the stub's levels (error, warn) are the process's.
    logger.warn(
      `port ${config.port} serves another demo process's provider stub: this one is on ${url}`,
    );
    return { url, app: own };
  }
  const url = listeningUrl(app);
  logger.log(`provider stub listening on ${url}`);
  return { url, app };
}

function listeningUrl(app: INestApplication): string {
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function isProviderStub(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return ((await response.json()) as { service?: string }).service === PROVIDER_STUB_NAME;
  } catch {
    return false;
  }
}
