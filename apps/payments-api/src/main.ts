import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { setUpApp } from './app.setup';
import { resolveDatabaseUrl } from './database/database-url';
import { runMigrations } from './database/run-migrations';

async function bootstrap(): Promise<void> {
  const logger = new Logger('PaymentsApi');
  const databaseUrl = await resolveDatabaseUrl(logger);
  const app = await NestFactory.create(
    AppModule.register({ databaseUrl, demoFaults: process.env.DEMO_FAULTS === '1' }),
    { bodyParser: false },
  );
  setUpApp(app);
  await runMigrations(app.get(DataSource));
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
