import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IdempotencyCleanup } from 'nestjs-pg-idempotency';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { configFromEnv } from './config';
import { resolveDatabaseUrl } from './database/database-url';
import { runMigrations } from './database/run-migrations';

/**
 * `npm run idempotency:cleanup`: one cleanup run now, for cron jobs and operators. Prints what
 * it removed as JSON. Safe beside running apps: batches skip rows they hold.
 */
async function main(): Promise<void> {
  const logger = new Logger('IdempotencyCleanup');
  const databaseUrl = await resolveDatabaseUrl(logger);
  const config = { ...configFromEnv(process.env, databaseUrl, 'http://127.0.0.1:9'), cleanup: false as const };
  const app = await NestFactory.createApplicationContext(AppModule.register(config), { logger: ['error', 'warn'] });
  try {
    await runMigrations(app.get(DataSource));
    const report = await app.get(IdempotencyCleanup).purgeExpired();
    // eslint-disable-next-line no-console
    console.log(JSON.stringify({ idempotency_keys: report }));
  } finally {
    await app.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    // eslint-disable-next-line no-console
    console.error(error);
    process.exit(1);
  },
);
