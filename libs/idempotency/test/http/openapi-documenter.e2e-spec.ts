import { Body, Controller, Get, HttpCode, type INestApplication, Post } from '@nestjs/common';
import { ApiResponse, DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { IdempotencyModule, IdempotencyProblemType, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { libraryInfrastructure } from '../support/library-infrastructure';
import { createLibraryApp, Effects } from './library-app';

@Controller('documented')
class DocumentedController {
  constructor(private readonly effects: Effects) {}

  @Post('plain')
  @Idempotent()
  async plain(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented/plain', body.tag) };
  }

  /** A key is optional here, and the write guard off: neither problem is documented. */
  @Post('optional-unguarded')
  @Idempotent({ required: false, writeGuard: 'off' })
  async optionalUnguarded(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented/optional-unguarded', body.tag) };
  }

  /** A route that documents its own 500: the library leaves it as written. */
  @Post('own-500')
  @Idempotent()
  @ApiResponse({ status: 500, description: 'The warehouse is on fire.' })
  async own500(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented/own-500', body.tag) };
  }
}

/** A controller that documents its 500 for every route. */
@Controller('documented-class')
@ApiResponse({ status: 500, description: 'Anything may burn here.' })
class ClassDocumentedController {
  constructor(private readonly effects: Effects) {}

  @Post()
  @Idempotent()
  async create(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented-class', body.tag) };
  }
}

/** `@Idempotent()` on the class: its POST is idempotent, its GET (a safe method) is not. */
@Controller('documented-class-level')
@Idempotent()
class ClassLevelDocumentedController {
  constructor(private readonly effects: Effects) {}

  @Post()
  async create(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented-class-level', body.tag) };
  }

  @Post('confirm')
  @HttpCode(200)
  async confirm(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented-class-level/confirm', body.tag) };
  }

  @Get()
  list() {
    return [];
  }
}

/** An idempotent route declared on a base class, served by the controller that extends it. */
abstract class BaseDocumentedController {
  constructor(protected readonly effects: Effects) {}

  @Post()
  @Idempotent()
  async create(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented-inherited', body.tag) };
  }
}

@Controller('documented-inherited')
class InheritedDocumentedController extends BaseDocumentedController {}

/** A base whose route only one subclass makes idempotent, with a class-level decorator. */
abstract class BaseSharedController {
  @Post()
  create(@Body() body: { tag: string }) {
    return { tag: body.tag };
  }
}

@Controller('documented-shared-idempotent')
@Idempotent()
class SharedIdempotentController extends BaseSharedController {}

@Controller('documented-shared-plain')
class SharedPlainController extends BaseSharedController {}

class CreatedDto {
  id!: number;
}

/**
 * As the @nestjs/swagger CLI plugin compiles a controller: the route's return type, recorded
 * for @nestjs/swagger to apply when it builds the document; and a route whose guard only warns.
 */
@Controller('documented-plugin')
class PluginDocumentedController {
  constructor(private readonly effects: Effects) {}

  static _OPENAPI_METADATA_FACTORY() {
    return { create: { type: CreatedDto } };
  }

  @Post()
  @Idempotent({ writeGuard: 'warn' })
  async create(@Body() body: { tag: string }): Promise<CreatedDto> {
    return { id: await this.effects.record('documented-plugin', body.tag) };
  }
}

interface Operation {
  parameters?: { name: string; in: string; required?: boolean }[];
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
}

const LIBRARY_STATUSES = ['400', '409', '422', '500', '503'];

const keyHeader = (operation: Operation) =>
  operation.parameters?.find((param) => param.in === 'header' && param.name === 'Idempotency-Key');

describe('OpenAPI documentation of @Idempotent() routes (library)', () => {
  let app: INestApplication;
  let paths: Record<string, { post: Operation; get: Operation }>;
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false }),
      undefined,
      {},
      {
        controllers: [
          DocumentedController,
          ClassDocumentedController,
          ClassLevelDocumentedController,
          InheritedDocumentedController,
          SharedIdempotentController,
          SharedPlainController,
          PluginDocumentedController,
        ],
      },
    ));
    const document = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    paths = document.paths as unknown as typeof paths;
  });
  afterAll(() => app.close());

  it('keeps the success response @nestjs/swagger gives a route without @ApiResponse()', () => {
    const statuses = (path: string) => Object.keys(paths[path].post.responses).sort();
    expect(statuses('/documented/plain')).toEqual(['201', ...LIBRARY_STATUSES]);
    expect(statuses('/documented-class-level')).toEqual(['201', ...LIBRARY_STATUSES]);
    // Its @HttpCode, as @nestjs/swagger reads it.
    expect(statuses('/documented-class-level/confirm')).toEqual(['200', ...LIBRARY_STATUSES]);
  });

  it('leaves the GET of a class-level @Idempotent() alone, as the interceptor does', async () => {
    const get = paths['/documented-class-level'].get;
    expect({ header: keyHeader(get), statuses: Object.keys(get.responses) }).toEqual({
      header: undefined,
      statuses: ['200'],
    });
    expect((await request(app.getHttpServer()).get('/documented-class-level')).status).toBe(200);
  });

  it('documents an idempotent route a controller inherits, as the interceptor enforces it', async () => {
    const post = paths['/documented-inherited'].post;
    expect(keyHeader(post)?.required).toBe(true);
    expect(Object.keys(post.responses).sort()).toEqual(['201', ...LIBRARY_STATUSES]);
    const keyless = await request(app.getHttpServer()).post('/documented-inherited').send({});
    expect(keyless.status).toBe(400);
  });

  it("documents the library's 500 problems on a route that has no 500 of its own", () => {
    const response = paths['/documented/plain'].post.responses['500'];
    expect(response.content).toHaveProperty(
      ['application/problem+json', 'schema', 'properties', 'type', 'enum'],
      [
        IdempotencyProblemType.responseTooLarge,
        IdempotencyProblemType.writeOutsideTransaction,
        IdempotencyProblemType.sealedRecordUnreadable,
      ],
    );
  });

  it('documents only the problems a route can answer: no missing key where it is optional, no write refused where the guard is off', () => {
    const post = paths['/documented/optional-unguarded'].post;
    const types = (status: string) =>
      (
        post.responses[status].content as Record<
          string,
          { schema: { properties: { type: { enum: string[] } } } }
        >
      )['application/problem+json'].schema.properties.type.enum;
    expect(keyHeader(post)?.required).toBe(false);
    expect(types('400')).not.toContain(IdempotencyProblemType.missingKey);
    expect(types('400')).toContain(IdempotencyProblemType.malformedKey);
    expect(types('500')).not.toContain(IdempotencyProblemType.writeOutsideTransaction);
    expect(types('500')).toContain(IdempotencyProblemType.responseTooLarge);
    // A required, guarded route lists both.
    const plain = paths['/documented/plain'].post.responses;
    expect(JSON.stringify(plain['400'])).toContain(IdempotencyProblemType.missingKey);
    expect(JSON.stringify(plain['500'])).toContain(IdempotencyProblemType.writeOutsideTransaction);
  });

  it('leaves an inherited route undocumented where only a subclass makes it idempotent: the handler is shared', async () => {
    const plain = paths['/documented-shared-plain'].post;
    expect({ header: keyHeader(plain), statuses: Object.keys(plain.responses) }).toEqual({
      header: undefined,
      statuses: ['201'],
    });
    const keyless = await request(app.getHttpServer())
      .post('/documented-shared-plain')
      .send({ tag: 'shared-plain' });
    expect(keyless.status).toBe(201);
  });

  it('keeps the type the CLI plugin recorded on the success response, and documents no refused write where the guard only warns', () => {
    const { responses } = paths['/documented-plugin'].post;
    expect(responses['201'].content).toHaveProperty(['application/json', 'schema', '$ref']);
    expect(JSON.stringify(responses['500'])).not.toContain(
      IdempotencyProblemType.writeOutsideTransaction,
    );
  });

  it("keeps a route's own 500, and still adds the other problems", () => {
    const { responses } = paths['/documented/own-500'].post;
    expect(responses['500'].description).toBe('The warehouse is on fire.');
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['400', '409', '422', '503']));
  });

  it("keeps a controller's own 500 on its routes", () => {
    expect(paths['/documented-class'].post.responses['500'].description).toBe(
      'Anything may burn here.',
    );
  });
});

/**
 * Nest's own guide builds the document between `NestFactory.create` and `listen()`, before any
 * `onModuleInit` hook ran; an "export openapi.json" script never calls `init()` at all.
 */
describe('OpenAPI documentation built before the app is initialised', () => {
  it('documents the key header and the problems all the same', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [...libraryInfrastructure(), IdempotencyModule.forRoot({ cleanup: false })],
      controllers: [DocumentedController],
      providers: [Effects],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      const document: OpenAPIObject = SwaggerModule.createDocument(
        app,
        new DocumentBuilder().build(),
      );
      const post = (document.paths['/documented/plain'] as { post: Operation }).post;
      expect(keyHeader(post)?.required).toBe(true);
      expect(Object.keys(post.responses).sort()).toEqual(['201', ...LIBRARY_STATUSES]);
    } finally {
      await app.close();
    }
  });
});
