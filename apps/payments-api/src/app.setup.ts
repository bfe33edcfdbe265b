import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/** What main.ts and the in-process tests both apply to the app. */
export function setUpApp(app: INestApplication): void {
  // JSON bodies up to 1 MiB; larger ones get 413, malformed ones 400 (ProblemDetailsFilter).
  (app as NestExpressApplication).useBodyParser('json', { limit: 1024 * 1024 });
  app.enableShutdownHooks();
}

/** API docs at /docs (JSON at /docs-json); @Idempotent() routes document their key header. */
export function setUpOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Demo payments API')
    .setDescription('Orders and payments made safe to retry with nestjs-pg-idempotency.')
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'demo_acme or demo_globex' })
    .addSecurityRequirements('bearer')
    .build();
  SwaggerModule.setup('docs', app, () => SwaggerModule.createDocument(app, config));
}
