import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import type { AppConfig } from './app.config';
import { AppModule } from './app.module';
import { setUpApp } from './app.setup';
import { resolveDatabaseUrl } from './database/database-url';
import { runMigrations } from './database/run-migrations';
import { messagingOverridesFromEnv, messagingSettings } from './messaging/messaging.config';
import { orderPaymentsMicroservice } from './messaging/order-payments.microservice';

async function bootstrap(): Promise<void> {
  const logger = new Logger('PaymentsApi');
  const databaseUrl = await resolveDatabaseUrl(logger);
  const config: AppConfig = {
    databaseUrl,
    demoFaults: process.env.DEMO_FAULTS === '1',
    amqpUrl: process.env.AMQP_URL || undefined,
    messaging: messagingOverridesFromEnv(process.env),
  };
  const app = await NestFactory.create(AppModule.register(config), { bodyParser: false });
  setUpApp(app);
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
    logger.log('AMQP_URL is not set: messaging is off (no order-payments consumer, no outbox relay)');
  }
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  logger.log(`payments API listening on http://localhost:${port}`);
  if (process.env.DEMO_FAULTS === '1') logger.warn('DEMO_FAULTS=1: X-Demo-Fault is honoured');
}

bootstrap().catch((error: unknown) => {
  // eslint-disable-next-line no-console
  console.error(error);
  process.exit(1);
});
