import {
  Body,
  Controller,
  Get,
  Header,
  HttpCode,
  type INestApplication,
  Injectable,
  type ModuleMetadata,
  Param,
  Post,
  Query,
  Res,
  SerializeOptions,
  UnprocessableEntityException,
  ValidationPipe,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Exclude } from 'class-transformer';
import { IsInt, IsOptional, IsString } from 'class-validator';
import { Idempotent } from 'nestjs-pg-idempotency';
import { DataSource } from 'typeorm';
import {
  type InfrastructureOptions,
  libraryInfrastructure,
} from '../support/library-infrastructure';
import { migrateTestDatabase } from '../support/migrations';

/** Every handler records its side effect here, through the transaction. */
@Injectable()
export class Effects {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async record(route: string, tag: string): Promise<number> {
    const [row] = await this.txHost.tx.query(
      `INSERT INTO library_test_effects (route, tag) VALUES ($1, $2) RETURNING id`,
      [route, tag],
    );
    return row.id;
  }

  /** A statement that fails, its error swallowed: the transaction is aborted from here on. */
  async failQuietly(): Promise<void> {
    await this.txHost.tx.query('SELECT 1 / 0').catch(() => undefined);
  }

  lockTimeout(): Promise<{ lock_timeout: string }[]> {
    return this.txHost.tx.query('SHOW lock_timeout');
  }

  async isolation(): Promise<string> {
    const [row] = await this.txHost.tx.query('SHOW transaction_isolation');
    return row.transaction_isolation;
  }
}

export class Account {
  constructor(
    readonly id: number,
    readonly email: string,
    passwordHash: string,
  ) {
    this.passwordHash = passwordHash;
  }

  @Exclude()
  passwordHash: string;
}

class ThingDto {
  @IsString()
  tag: string;

  @IsOptional()
  @IsInt()
  size: number = 1;

  /** A default that differs on every creation: it must stay out of the fingerprint. */
  @IsOptional()
  @IsString()
  requestedAt: string = new Date(Date.now() + Math.random()).toISOString() + Math.random();
}

@Controller()
export class LibraryTestController {
  constructor(private readonly effects: Effects) {}

  @Post('widgets')
  @Idempotent()
  async widget(@Body() body: ThingDto) {
    return { id: await this.effects.record('widgets', body.tag), tag: body.tag, size: body.size };
  }

  @Post('gadgets')
  @Idempotent()
  async gadget(@Body() body: ThingDto) {
    return { id: await this.effects.record('gadgets', body.tag) };
  }

  @Post('things/:thingId')
  @Idempotent()
  async thing(
    @Param('thingId') thingId: string,
    @Query('mode') mode: string | undefined,
    @Body() body: ThingDto,
  ) {
    return { id: await this.effects.record(`things/${thingId}`, body.tag), mode: mode ?? null };
  }

  @Post('optional')
  @Idempotent({ required: false, ttlSeconds: 60 })
  async optional(@Body() body: ThingDto) {
    return { id: await this.effects.record('optional', body.tag) };
  }

  @Post('shared-a')
  @Idempotent({ scope: 'shared' })
  async sharedA(@Body() body: ThingDto) {
    return { id: await this.effects.record('shared-a', body.tag) };
  }

  @Post('shared-b')
  @Idempotent({ scope: 'shared' })
  async sharedB(@Body() body: ThingDto) {
    return { id: await this.effects.record('shared-b', body.tag) };
  }

  @Post('text')
  @Idempotent()
  async text(@Body() body: ThingDto) {
    return `effect ${await this.effects.record('text', body.tag)}`;
  }

  @Post('empty')
  @HttpCode(204)
  @Idempotent()
  async empty(@Body() body: ThingDto): Promise<void> {
    await this.effects.record('empty', body.tag);
  }

  @Post('crash')
  @Idempotent()
  async crash(@Body() body: ThingDto) {
    await this.effects.record('crash', body.tag);
    throw new Error('a bug, not a decision');
  }

  @Post('headers')
  @Idempotent()
  async headers(
    @Body() body: ThingDto,
    @Res({ passthrough: true }) res: { setHeader(n: string, v: string): void },
  ) {
    const id = await this.effects.record('headers', body.tag);
    res.setHeader('x-custom', `custom-${id}`);
    res.setHeader('x-not-stored', `volatile-${id}`);
    return { id };
  }

  /** A redirect after a write (POST-redirect-GET): a success, so its write commits. */
  @Post('redirect')
  @HttpCode(303)
  @Idempotent()
  async redirect(
    @Body() body: ThingDto,
    @Res({ passthrough: true }) res: { setHeader(n: string, v: string): void },
  ) {
    const id = await this.effects.record('redirect', body.tag);
    res.setHeader('location', `/things/${id}`);
  }

  /** A handler that takes its time after its write: its twin meets the uncommitted claim. */
  @Post('slow')
  @Idempotent()
  async slow(@Body() body: ThingDto) {
    const id = await this.effects.record('slow', body.tag);
    await new Promise((done) => setTimeout(done, 300));
    return { id };
  }

  /** A handler that swallows a database error and answers as if all went well. */
  @Post('swallowed-error')
  @Idempotent()
  async swallowedError(@Body() body: ThingDto) {
    const id = await this.effects.record('swallowed-error', body.tag);
    await this.effects.failQuietly();
    return { id };
  }

  /** The handler's lock_timeout: the claim's bound must not leak into it. */
  @Post('lock-timeout')
  @Idempotent()
  async lockTimeout(@Body() body: ThingDto) {
    await this.effects.record('lock-timeout', body.tag);
    const [row] = await this.effects.lockTimeout();
    return { lockTimeout: row.lock_timeout };
  }

  /** The transaction's isolation level, as the handler sees it. */
  @Post('isolation')
  @Idempotent()
  async isolation(@Body() body: ThingDto) {
    return {
      id: await this.effects.record('isolation', body.tag),
      isolation: await this.effects.isolation(),
    };
  }

  /** A deterministic failure after a write: stored, and the write rolled back. */
  @Post('declined')
  @Idempotent()
  async declined(@Body() body: ThingDto) {
    await this.effects.record('declined', body.tag);
    throw new UnprocessableEntityException(`declined ${body.tag}`);
  }

  /** A class instance with a secret: serialised like ClassSerializerInterceptor would. */
  @Post('account')
  @Idempotent()
  async account(@Body() body: ThingDto) {
    const id = await this.effects.record('account', body.tag);
    return new Account(id, `${body.tag}@example.com`, 'SECRET-HASH');
  }

  /** `@SerializeOptions()` on the route: its fields with the prefix are neither stored nor sent. */
  @Post('account-serialized')
  @SerializeOptions({ excludePrefixes: ['email'] })
  @Idempotent()
  async accountSerialized(@Body() body: ThingDto) {
    const id = await this.effects.record('account-serialized', body.tag);
    return new Account(id, `${body.tag}@example.com`, 'SECRET-HASH');
  }

  /** A plain object under `@SerializeOptions({ type })`: serialised as an `Account`, secret left out. */
  @Post('account-plain')
  @SerializeOptions({ type: Account })
  @Idempotent()
  async accountPlain(@Body() body: ThingDto) {
    const id = await this.effects.record('account-plain', body.tag);
    return { id, email: `${body.tag}@example.com`, passwordHash: 'SECRET-HASH' };
  }

  /**
   * JSON text the handler serialised itself (from the database's `row_to_json`, say): a number
   * JavaScript cannot hold, a trailing zero, or no JSON at all (`?invalid`). Sent as is.
   */
  @Post('json-text')
  @Header('Content-Type', 'application/json')
  @Idempotent()
  async jsonText(@Body() body: ThingDto, @Query('invalid') invalid?: string) {
    const id = await this.effects.record('json-text', body.tag);
    return invalid ? `not json {${id}` : `{"id":${id},"big":12345678901234567890,"amount":1.50}`;
  }

  /** A vendor JSON type set by the handler is kept. */
  @Post('vendor-json')
  @Header('Content-Type', 'application/vnd.api+json')
  @Idempotent()
  async vendorJson(@Body() body: ThingDto) {
    return { data: { id: await this.effects.record('vendor-json', body.tag) } };
  }

  @Get('plain')
  plain() {
    return { ok: true };
  }
}

@Controller('class-level')
@Idempotent()
export class ClassLevelController {
  constructor(private readonly effects: Effects) {}

  @Post()
  async create(@Body() body: ThingDto) {
    return { id: await this.effects.record('class-level', body.tag) };
  }

  @Get()
  list() {
    return [];
  }
}

/** A bare Nest app using the library as a user would: TypeORM, nestjs-cls, the module. */
export async function createLibraryApp(
  idempotencyModule: NonNullable<ModuleMetadata['imports']>[number],
  configure: (app: INestApplication) => void = () => undefined,
  infrastructure: InfrastructureOptions = {},
  /** A test's own controllers and providers, beside the shared ones. */
  extra: Pick<ModuleMetadata, 'controllers' | 'providers'> = {},
  /** Modules the app imports before the library (a ConfigModule, say). */
  imports: NonNullable<ModuleMetadata['imports']> = [],
): Promise<{
  app: INestApplication;
  dataSource: DataSource;
}> {
  const moduleRef = await Test.createTestingModule({
    imports: [...imports, ...libraryInfrastructure(infrastructure), idempotencyModule],
    controllers: [LibraryTestController, ClassLevelController, ...(extra.controllers ?? [])],
    providers: [Effects, ...(extra.providers ?? [])],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalPipes(new ValidationPipe({ transform: true }));
  configure(app);
  const dataSource = app.get(DataSource);
  await migrateTestDatabase(dataSource); // library_test_effects included
  await app.init();
  return { app, dataSource };
}
