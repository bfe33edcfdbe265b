import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AppConfig } from '../../apps/payments-api/src/app.config';
import { AppModule } from '../../apps/payments-api/src/app.module';
import { setUpApp } from '../../apps/payments-api/src/app.setup';
import { runMigrations } from '../../apps/payments-api/src/database/run-migrations';
import { DataSource } from 'typeorm';

/** The demo app in this Jest worker, on the run's PostgreSQL, with faults enabled. */
export async function createTestApp(config: Partial<AppConfig> = {}): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppModule.register({
        databaseUrl: databaseUrl(),
        demoFaults: true,
        providerUrl: 'http://127.0.0.1:9', // no card processor unless a test starts one
        providerTimeoutMs: 5000,
        leaseSeconds: 60,
        benchRoutes: false,
        ...config,
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error', 'warn'] });
  setUpApp(app);
  await runMigrations(app.get(DataSource));
  await app.init();
  return app;
}

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (globalSetup)');
  return url;
}
