import { ConfigModule, ConfigService } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { IdempotencyModule } from 'nestjs-pg-idempotency';
import type { DataSource } from 'typeorm';
import { createLibraryApp } from './library-app';

/** The README's forRootAsync example, as written, with the variable set in the environment. */
describe('forRootAsync with @nestjs/config, as the README shows it', () => {
  const previous = process.env.IDEMPOTENCY_TTL_SECONDS;
  beforeAll(() => {
    process.env.IDEMPOTENCY_TTL_SECONDS = '3600';
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.IDEMPOTENCY_TTL_SECONDS;
    else process.env.IDEMPOTENCY_TTL_SECONDS = previous;
  });

  it('takes the time to live from the environment', async () => {
    const { app, dataSource } = await createLibraryApp(
      IdempotencyModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          ttlSeconds: Number(config.get('IDEMPOTENCY_TTL_SECONDS', 86400)),
        }),
      }),
      undefined,
      {},
      {},
      [ConfigModule.forRoot({ ignoreEnvFile: true })],
    );
    try {
      const key = randomUUID();
      await request(app.getHttpServer())
        .post('/widgets')
        .set('idempotency-key', key)
        .send({ tag: 'config' })
        .expect(201);
      expect(await ttlOf(dataSource, key)).toBe(3600);
    } finally {
      await app.close();
    }
  });
});

async function ttlOf(dataSource: DataSource, key: string): Promise<number> {
  const [row] = await dataSource.query(
    'SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM idempotency_keys WHERE idem_key = $1',
    [key],
  );
  return row.ttl;
}
