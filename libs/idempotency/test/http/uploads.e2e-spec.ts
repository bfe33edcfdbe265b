import { randomUUID } from 'node:crypto';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Body,
  Controller,
  type INestApplication,
  Post,
  UploadedFile,
  UploadedFiles,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor, FilesInterceptor } from '@nestjs/platform-express';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

interface Upload {
  originalname: string;
  size: number;
}

/** Multipart routes: multer (Nest's file interceptors) in memory, its default storage. */
@Controller('uploads')
class UploadController {
  constructor(private readonly effects: Effects) {}

  /**
   * The file interceptor outside `@Idempotent()`'s: the library sees the parsed upload. A
   * method's decorators apply bottom up, and an interceptor added later runs inside the ones
   * added before, so the decorator listed first runs innermost.
   */
  @Post('outer')
  @Idempotent()
  @UseInterceptors(FileInterceptor('file'))
  async outer(@UploadedFile() file: Upload, @Body() body: { note?: string }) {
    const id = await this.effects.record('uploads/outer', `${body.note}:${file.originalname}`);
    return { id, name: file.originalname, size: file.size };
  }

  @Post('many')
  @Idempotent()
  @UseInterceptors(FilesInterceptor('files'))
  async many(@UploadedFiles() files: Upload[], @Body() body: { note?: string }) {
    const id = await this.effects.record('uploads/many', `${body.note}:${files.length}`);
    return { id, names: files.map((file) => file.originalname) };
  }

  /** Inside: the body is still unread when the library fingerprints the request. */
  @Post('inner')
  @UseInterceptors(FileInterceptor('file'))
  @Idempotent()
  async inner(@UploadedFile() file: Upload, @Body() body: { note?: string }) {
    const id = await this.effects.record('uploads/inner', `${body.note}:${file.originalname}`);
    return { id };
  }

  /** No parser reads text/plain in this app: `req.body` stays undefined. */
  @Post('text')
  @Idempotent()
  async text() {
    return { id: await this.effects.record('uploads/text', randomUUID()) };
  }
}

/**
 * A request's fingerprint covers what it uploads: the same key with another file is a reused
 * key (422), never a replay of the first upload, and a body the library cannot see is refused
 * before anything runs.
 */
describe('uploads on @Idempotent() routes', () => {
  let app: INestApplication;
  const db = new TestDatabase();

  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false }),
      undefined,
      {},
      { controllers: [UploadController] },
    ));
  });

  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const effects = (route: string, note: string) =>
    db.query(`SELECT tag FROM library_test_effects WHERE route = $1 AND tag LIKE $2`, [
      route,
      `${note}:%`,
    ]);

  const upload = (path: string, key: string, note: string, bytes: string, name: string) =>
    request(app.getHttpServer())
      .post(path)
      .set('idempotency-key', key)
      .field('note', note)
      .attach(path.endsWith('many') ? 'files' : 'file', Buffer.from(bytes), name);

  it('replays the same upload and refuses another file under the same key (422)', async () => {
    const key = randomUUID();
    const note = `n-${key}`;
    const first = await upload('/uploads/outer', key, note, 'aaa', 'a.txt');
    expect(first.status).toBe(201);
    const again = await upload('/uploads/outer', key, note, 'aaa', 'a.txt');
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    // Same name and size, other bytes: only the digest tells them apart.
    const other = await upload('/uploads/outer', key, note, 'aab', 'a.txt');
    expect(other.status).toBe(422);
    expect(other.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await effects('uploads/outer', note)).toEqual([{ tag: `${note}:a.txt` }]);
  });

  it('covers every file of a multi-file upload', async () => {
    const key = randomUUID();
    const note = `m-${key}`;
    const send = (second: string) =>
      request(app.getHttpServer())
        .post('/uploads/many')
        .set('idempotency-key', key)
        .field('note', note)
        .attach('files', Buffer.from('one'), 'one.txt')
        .attach('files', Buffer.from(second), 'two.txt');
    expect((await send('two')).status).toBe(201);
    expect((await send('TWO')).status).toBe(422);
    expect(await effects('uploads/many', note)).toEqual([{ tag: `${note}:2` }]);
  });

  it('refuses (400) an upload the library cannot see, before the handler runs', async () => {
    const note = `i-${randomUUID()}`;
    const res = await upload('/uploads/inner', randomUUID(), note, 'aaa', 'a.txt');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.type).toBe('urn:idempotency:unfingerprintable-request');
    expect(await effects('uploads/inner', note)).toEqual([]);
  });

  it('refuses (400) a body no parser read', async () => {
    const res = await request(app.getHttpServer())
      .post('/uploads/text')
      .set('idempotency-key', randomUUID())
      .set('content-type', 'text/plain')
      .send('some text');
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('urn:idempotency:unfingerprintable-request');
    expect(
      await db.query(`SELECT 1 FROM library_test_effects WHERE route = 'uploads/text'`),
    ).toEqual([]);
  });

  it('takes an empty chunked body that no parser read', async () => {
    const server = app.getHttpServer() as Server;
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, resolve));
    const { port } = server.address() as AddressInfo;
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const sent = httpRequest(
        {
          port,
          method: 'POST',
          path: '/uploads/text',
          headers: { 'idempotency-key': randomUUID(), 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      sent.on('error', reject);
      sent.end();
    });
    expect(status).toBe(201);
  });

  it('still takes a request without a body on such a route', async () => {
    const res = await request(app.getHttpServer())
      .post('/uploads/text')
      .set('idempotency-key', randomUUID());
    expect(res.status).toBe(201);
  });
});
