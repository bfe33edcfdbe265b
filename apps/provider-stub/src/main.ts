import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { onOff } from '../../payments-api/src/config';
import { resolveDatabaseUrl } from '../../payments-api/src/database/database-url';
import { startProviderStub } from './provider-stub.app';

/** The stub on its own (`npm run start:provider`); `npm start` runs it inside the payments API. */
async function bootstrap(): Promise<void> {
  const logger = new Logger('ProviderStub');
  const databaseUrl = await resolveDatabaseUrl(logger);
  await startProviderStub({
    databaseUrl,
    demoFaults: process.env.DEMO_FAULTS === '1',
    idempotency: onOff(process.env, 'PROVIDER_IDEMPOTENCY', true),
    port: Number(process.env.PROVIDER_PORT ?? 3001),
  });
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
