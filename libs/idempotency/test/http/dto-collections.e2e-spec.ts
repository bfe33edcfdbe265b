import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsString } from 'class-validator';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

/** class-transformer's documented way to a Set property: the DTO holds a Set, not the array. */
class TaggedDto {
  @IsString()
  name!: string;

  @Type(() => String)
  tags!: Set<string>;
}

@Controller('tagged')
class TaggedController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Idempotent()
  async create(@Body() body: TaggedDto) {
    return { id: await this.effects.record('tagged', body.name), tags: [...body.tags] };
  }
}

/**
 * The fingerprint reads the body as the route's DTO makes it (its defaults filled in), where a
 * property may be a Set or a Map: JSON would give `{}` for either, and every request alike.
 */
describe('a DTO with a Set property on an @Idempotent() route', () => {
  let app: INestApplication;
  const db = new TestDatabase();
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false }),
      undefined,
      {},
      { controllers: [TaggedController] },
    ));
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const post = (key: string, body: object) =>
    request(app.getHttpServer()).post('/tagged').set('idempotency-key', key).send(body);

  it('runs, replays the same tags, and refuses other tags under the key', async () => {
    const key = randomUUID();
    const name = `tagged-${key}`;
    const first = await post(key, { name, tags: ['x', 'y'] });
    expect(first.status).toBe(201);
    expect(first.body.tags).toEqual(['x', 'y']);
    expect((await post(key, { name, tags: ['x', 'y'] })).text).toBe(first.text);
    expect((await post(key, { name, tags: ['x', 'z'] })).status).toBe(422);
    expect(
      await db.query(`SELECT 1 FROM library_test_effects WHERE tag = $1`, [name]),
    ).toHaveLength(1);
  });
});
