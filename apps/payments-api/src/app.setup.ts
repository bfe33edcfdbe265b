import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';

/** What main.ts and the in-process tests both apply to the app. */
export function setUpApp(app: INestApplication): void {
  // JSON bodies up to 1 MiB; larger ones get 413, malformed ones 400 (ProblemDetailsFilter).
  (app as NestExpressApplication).useBodyParser('json', { limit: 1024 * 1024 });
  app.enableShutdownHooks();
}
