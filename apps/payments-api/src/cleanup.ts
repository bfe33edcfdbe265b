import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { IdempotencyCleanup } from 'nestjs-pg-idempotency';
import { MessagingCleanup } from 'nestjs-pg-idempotency/messaging';
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
  const base = configFromEnv(process.env, databaseUrl, 'http://127.0.0.1:9');
  // No timers and no relay in a one-shot command: it cleans, reports and exits.
  const config = {
    ...base,
    cleanup: false as const,
    messaging: { ...base.messaging, relay: false },
  };
  const app = await NestFactory.createApplicationContext(AppModule.register(config), {
    logger: ['error', 'warn'],
  });
  try {
    await runMigrations(app.get(DataSource));
    const report: Record<string, unknown> = {
      idempotency_keys: await app.get(IdempotencyCleanup).purgeExpired(),
    };
    // processed_messages and the outbox: their module exists when messaging is on (AMQP_URL).
    const messaging = tryGet(() => app.get(MessagingCleanup, { strict: false }));
    if (messaging) report.messaging = await messaging.purge();
    console.log(JSON.stringify(report));
  } finally {
    await app.close();
  }
}

function tryGet<T>(get: () => T): T | undefined {
  try {
    return get();
  } catch {
    return undefined;
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
