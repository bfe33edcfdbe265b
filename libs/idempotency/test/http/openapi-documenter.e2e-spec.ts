import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { ApiResponse, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { IdempotencyModule, IdempotencyProblemType, Idempotent } from 'nestjs-pg-idempotency';
import { createLibraryApp, Effects } from './library-app';

@Controller('documented')
class DocumentedController {
  constructor(private readonly effects: Effects) {}

  @Post('plain')
  @Idempotent()
  async plain(@Body() body: { tag: string }) {
    return { id: await this.effects.record('documented/plain', body.tag) };
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

interface Operation {
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
}

describe('OpenAPI documentation of @Idempotent() routes (library)', () => {
  let app: INestApplication;
  let paths: Record<string, { post: Operation }>;
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ cleanup: false }),
      undefined,
      {},
      {
        controllers: [DocumentedController, ClassDocumentedController],
      },
    ));
    const document = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    paths = document.paths as unknown as Record<string, { post: Operation }>;
  });
  afterAll(() => app.close());

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
