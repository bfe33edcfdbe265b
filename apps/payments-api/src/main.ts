import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { startProviderStub } from '../../provider-stub/src/provider-stub.app';
import { AppModule } from './app.module';
import { setUpApp, setUpOpenApi } from './app.setup';
import { configFromEnv, logLevelsFromEnv, onOff, positiveInteger } from './config';
import { resolveDatabase } from './database/database-url';
import { runMigrations } from './database/run-migrations';
import { createHttpAdapter, httpAdapterKind } from './http-adapter';
import { messagingSettings } from './messaging/messaging.config';
import { orderPaymentsMicroservice } from './messaging/order-payments.microservice';
import { GracefulShutdown } from './shutdown';

async function bootstrap(): Promise<void> {
  const logger = new Logger('PaymentsApi');
  const env = process.env;
  // Listening from the start: a signal closes what is open so far, last opened first.
  const shutdown = new GracefulShutdown(logger);
  const database = await resolveDatabase(logger);
  const databaseUrl = database.url;
  shutdown.onStop('PostgreSQL', () => database.stop());
  // One command starts the whole demo: the card processor stub runs beside the API unless
  // PROVIDER_URL points at another one.
  let providerUrl = env.PROVIDER_URL;
  if (!providerUrl) {
    const stub = await startProviderStub({
      databaseUrl,
      demoFaults: env.DEMO_FAULTS === '1',
      idempotency: onOff(env, 'PROVIDER_IDEMPOTENCY', true),
      port: positiveInteger(env, 'PROVIDER_PORT', 3001),
    });
    providerUrl = stub.url;
    shutdown.onStopApp('the provider stub', stub.app);
  }
  const config = configFromEnv(env, databaseUrl, providerUrl);
  const adapter = createHttpAdapter(httpAdapterKind(env.HTTP_ADAPTER));
  // Nest's log levels are process-wide: set after the stub's, they apply to both apps.
  const app = await NestFactory.create(AppModule.register(config), adapter, {
    bodyParser: false,
    logger: logLevelsFromEnv(env),
  });
  shutdown.onStopApp('the payments API', app);
  setUpApp(app);
  setUpOpenApi(app);
  await runMigrations(app.get(DataSource));
  if (config.amqpUrl) {
    const settings = messagingSettings(config.amqpUrl, config.messaging);
    // After the migrations: the consumer writes to processed_messages from its first message.
    app.connectMicroservice(orderPaymentsMicroservice(settings));
    await app.startAllMicroservices();
    logger.log(
      `messaging on: consuming "${settings.orderPaymentsQueue}" (prefetch ${settings.prefetchCount}), ` +
        `outbox relay ${settings.relay ? 'on' : 'off'}`,
    );
  } else {
    logger.log(
      'AMQP_URL is not set: messaging is off (no order-payments consumer, no outbox relay)',
    );
  }
  const port = positiveInteger(env, 'PORT', 3000);
  await app.listen(port, '0.0.0.0');
  logger.log(
    `payments API listening on http://localhost:${port}, card processor at ${providerUrl}`,
  );
  if (config.demoFaults) logger.warn('DEMO_FAULTS=1: X-Demo-Fault is honoured');
  if (config.benchRoutes)
    logger.warn('BENCH_ROUTES=1: POST /bench/orders and GET /bench/stats are served');
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
