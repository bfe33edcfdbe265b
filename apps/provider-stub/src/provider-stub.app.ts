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
 * Starts the stub on `port`. When the port is taken by a stub already (another payments API
 * process of the same demo started it), that one is used: one provider, shared, and no `app`
 * of ours to close.
 */
export async function startProviderStub(
  config: ProviderStubConfig & { port: number },
): Promise<{ url: string; app?: INestApplication }> {
  const logger = new Logger('ProviderStub');
  const url = `http://127.0.0.1:${config.port}`;
  const app = await createProviderStub(config);
  try {
    await app.listen(config.port, '127.0.0.1');
  } catch (error) {
    await app.close();
    if ((error as { code?: string }).code !== 'EADDRINUSE' || !(await isProviderStub(url)))
      throw error;
    logger.log(`port ${config.port} already serves a provider stub: using it`);
    return { url };
  }
  logger.log(`provider stub listening on ${url}`);
  return { url, app };
}

async function isProviderStub(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return ((await response.json()) as { service?: string }).service === PROVIDER_STUB_NAME;
  } catch {
    return false;
  }
}
