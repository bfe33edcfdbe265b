import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { BODY_LIMIT_BYTES } from './http-adapter';

/**
 * What main.ts and the in-process tests both apply to the app. JSON bodies up to 1 MiB; larger
 * ones get 413, malformed ones 400 (ProblemDetailsFilter). Fastify takes its limit in the
 * adapter's constructor instead. No enableShutdownHooks(): main.ts stops on signals in its own
 * order (shutdown.ts), and Nest's hooks, running beside it, closed the pools under the requests
 * in flight (and the same pool twice).
 */
export function setUpApp(app: INestApplication): void {
  if (app.getHttpAdapter().getType() === 'express') {
    (app as NestExpressApplication).useBodyParser('json', { limit: BODY_LIMIT_BYTES });
  }
}

/**
 * API docs at /docs (JSON at /docs-json); @Idempotent() routes document their key header.
 * On Fastify only the JSON is served: Swagger UI's assets need @fastify/static, whose majors
 * the Swagger module and the Fastify adapter disagree on.
 */
export function setUpOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Demo payments API')
    .setDescription('Orders and payments made safe to retry with nestjs-pg-idempotency.')
    .setVersion('1')
    .addBearerAuth({
      type: 'http',
      scheme: 'bearer',
      // The demo's keys are opaque strings, not JWTs (DocumentBuilder's default format).
      bearerFormat: 'API key',
      description: 'demo_acme or demo_globex',
    })
    .addSecurityRequirements('bearer')
    .build();
  const ui = app.getHttpAdapter().getType() === 'express';
  SwaggerModule.setup('docs', app, () => SwaggerModule.createDocument(app, config), {
    ui,
    raw: ['json'],
  });
}
