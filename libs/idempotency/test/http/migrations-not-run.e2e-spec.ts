import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, type LoggerService, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import { ClsModule } from 'nestjs-cls';
import request from 'supertest';
import { databaseUrl } from '../support/database-url';
import { TestDatabase } from '../support/test-database';

@Controller('unmigrated')
class UnmigratedController {
  @Post()
  @Idempotent()
  create(@Body() body: { tag: string }) {
    return { tag: body.tag };
  }
}

/** Every line the app logs, by level. */
class RecordingLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log(message: unknown) {
    this.lines.push({ level: 'log', message: String(message) });
  }
  error(message: unknown) {
    this.lines.push({ level: 'error', message: String(message) });
  }
  warn(message: unknown) {
    this.lines.push({ level: 'warn', message: String(message) });
  }
}

/**
 * An app whose database never ran the library's migrations (here: its connections' search_path
 * is a schema without the key table). Its requests fail, and the log says what to do, once.
 */
describe('an app whose database lacks the key table', () => {
  const db = new TestDatabase();
  const schema = `no_keys_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const logger = new RecordingLogger();
  let app: INestApplication;

  beforeAll(async () => {
    await db.query(`CREATE SCHEMA ${schema}`);
    const moduleRef = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: databaseUrl(),
          extra: { options: `-c search_path=${schema}` },
        }),
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({
              imports: [TypeOrmModule],
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
            }),
          ],
        }),
        IdempotencyModule.forRoot({ cleanup: false }),
      ],
      controllers: [UnmigratedController],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await db.query(`DROP SCHEMA ${schema} CASCADE`);
    await db.close();
  });

  it('answers 500 and says once, in the log, that the migrations did not run', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await request(app.getHttpServer())
        .post('/unmigrated')
        .set('idempotency-key', randomUUID())
        .send({ tag: 'x' });
      expect(res.status).toBe(500);
    }
    const said = logger.lines.filter(
      (line) => line.level === 'error' && line.message.includes('idempotencyMigrations'),
    );
    expect(said).toHaveLength(1);
    expect(said[0].message).toMatch(/^the table idempotency_keys does not exist/);
  });
});
