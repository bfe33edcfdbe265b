import type { INestApplication, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { paymentsApiMigrations } from '../../migrations';
import { AppModule } from '../../apps/payments-api/src/app.module';
import { setUpApp } from '../../apps/payments-api/src/app.setup';
import { configFromEnv } from '../../apps/payments-api/src/config';
import { runMigrations } from '../../apps/payments-api/src/database/run-migrations';
import { createHttpAdapter } from '../../apps/payments-api/src/http-adapter';
import { messagingSettings } from '../../apps/payments-api/src/messaging/messaging.config';
import { orderPaymentsMicroservice } from '../../apps/payments-api/src/messaging/order-payments.microservice';

/**
 * The demo's migrations on `url`, as the demo runs them at start: in one transaction under a
 * transaction-level advisory lock, which a pooler in transaction mode keeps on one server session.
 */
export async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url, migrations: paymentsApiMigrations });
  await dataSource.initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Every line the apps log, debug included, as `<context>: <message>`; errors and warnings are
 * printed too. Nest's logger is process-wide: every app of the test file writes here.
 */
export class CapturedLogs implements LoggerService {
  readonly lines: string[] = [];

  count(fragment: string): number {
    return this.lines.filter((line) => line.includes(fragment)).length;
  }

  log(message: unknown, context?: string): void {
    this.keep(message, context);
  }
  debug(message: unknown, context?: string): void {
    this.keep(message, context);
  }
  verbose(message: unknown, context?: string): void {
    this.keep(message, context);
  }
  warn(message: unknown, context?: string): void {
    const line = this.keep(message, context);
    // Two demo apps in one process both register TypeORM's default name; each keeps its own DataSource.
    if (context === 'DataSourceNameRegistry') return;
    console.warn(line);
  }
  error(message: unknown, ...rest: unknown[]): void {
    console.error(
      this.keep(message, typeof rest.at(-1) === 'string' ? (rest.at(-1) as string) : undefined),
      ...rest.slice(0, -1),
    );
  }
  fatal(message: unknown, context?: string): void {
    this.error(message, context);
  }

  private keep(message: unknown, context?: string): string {
    const line = `${context ?? ''}: ${message instanceof Error ? message.stack : String(message)}`;
    this.lines.push(line);
    return line;
  }
}

/**
 * The demo app in this Jest worker, as test/support/test-app.ts builds it, but from `env` read
 * as the demo reads its environment (configFromEnv), on `databaseUrl` (PgBouncer) without running
 * the migrations (the suite runs them once, see `migrate`), logging into `logs`, and with the order-payments
 * consumer when `AMQP_URL` is set, as main.ts starts it.
 */
export async function createAppBehindPgBouncer(
  env: NodeJS.ProcessEnv,
  urls: { databaseUrl: string; providerUrl: string },
  logs: CapturedLogs,
): Promise<INestApplication> {
  const config = configFromEnv(env, urls.databaseUrl, urls.providerUrl);
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register(config)],
  }).compile();
  const app = moduleRef.createNestApplication(createHttpAdapter('express'), {
    bodyParser: false,
    logger: logs,
  });
  setUpApp(app);
  if (config.amqpUrl) {
    app.connectMicroservice(
      orderPaymentsMicroservice(messagingSettings(config.amqpUrl, config.messaging)),
    );
    await app.startAllMicroservices();
  }
  await app.init();
  return app;
}
