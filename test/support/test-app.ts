import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AppConfig } from '../../apps/payments-api/src/app.config';
import { AppModule } from '../../apps/payments-api/src/app.module';
import { setUpApp } from '../../apps/payments-api/src/app.setup';
import { createHttpAdapter, type HttpAdapterKind } from '../../apps/payments-api/src/http-adapter';
import { runMigrations } from '../../apps/payments-api/src/database/run-migrations';
import { DataSource } from 'typeorm';

/** The demo app in this Jest worker, on the run's PostgreSQL, with faults enabled. */
export async function createTestApp(
  config: Partial<AppConfig> = {},
  beforeInit: (app: INestApplication) => void = () => undefined,
  adapter: HttpAdapterKind = 'express',
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppModule.register({
        databaseUrl: databaseUrl(),
        demoFaults: true,
        providerUrl: 'http://127.0.0.1:9', // no card processor unless a test starts one
        providerTimeoutMs: 5000,
        leaseSeconds: 60,
        cleanup: false,
        benchRoutes: false,
        graphql: adapter === 'express', // the demo mounts GraphQL on Express only
        ...config,
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication(createHttpAdapter(adapter), {
    bodyParser: false,
    logger: ['error', 'warn'],
  });
  setUpApp(app);
  beforeInit(app);
  await runMigrations(app.get(DataSource));
  await app.init();
  if (adapter === 'fastify')
    await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
  return app;
}

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (globalSetup)');
  return url;
}
