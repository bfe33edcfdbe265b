import type { NestInterceptor, Type } from '@nestjs/common';
import { IdempotencyInterceptor as IdempotencyRequestInterceptor } from './idempotency.interceptor';

export { IdempotencyModule } from './idempotency.module';
export type {
  IdempotencyModuleAsyncOptions,
  IdempotencyModuleRootOptions,
} from './idempotency.module-definition';
export { Idempotent } from './idempotent.decorator';

/**
 * The interceptor `@Idempotent()` attaches. Register it globally (`APP_INTERCEPTOR` with
 * `useExisting`) or add it with `@UseInterceptors()` if you like: a request still has one run.
 * Typed as a plain Nest interceptor: its constructor is the module's business.
 */
export const IdempotencyInterceptor: Type<NestInterceptor> = IdempotencyRequestInterceptor;
export { Phases } from './phased/phases.decorator';
export { IdempotentPhases, type PhaseFetchInit } from './phased/idempotent-phases';
export { LeaseLostError } from './phased/lease-lost.error';
export { childKey } from './child-key';
export { IdempotencyCleanup, type CleanupReport } from './cleanup/idempotency-cleanup';
export type { IdempotencyEvent, IdempotencyEventType } from './events/idempotency-event';
export type {
  IdempotencyModuleOptions,
  IdempotentOptions,
  RenderedException,
  ReplayContext,
  StoredResponse,
  TenantResolver,
} from './idempotency.options';
export { defaultShouldStore, principalTenantResolver } from './idempotency.defaults';
export { IdempotencyError } from './idempotency-error';
export { IdempotencyProblemType } from './idempotency.errors';
export { isDatabaseUnavailable } from './postgres-errors';
export {
  PROBLEM_CONTENT_TYPE,
  problemFromException,
  renderProblem,
  type ProblemDetails,
} from './problem-details';
export {
  canonicalJson,
  MAX_BODY_DEPTH,
  requestFingerprint,
  type FingerprintInput,
} from './fingerprint';
export { IdempotencyKeyEntity } from './idempotency-key.entity';
export { CreateIdempotencyKeys1764662400000 } from './migrations/1764662400000-create-idempotency-keys';
export { AddPhasedLeases1764748800000 } from './migrations/1764748800000-add-phased-leases';

/**
 * The key table's migrations, in order; spread them into your DataSource's `migrations`. The
 * messaging tables' are `messagingMigrations`, from nestjs-pg-idempotency/messaging.
 */
export { idempotencyMigrations } from './migrations';
