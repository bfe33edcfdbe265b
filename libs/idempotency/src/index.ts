import type { NestInterceptor, Type } from '@nestjs/common';
import { IdempotencyInterceptor as IdempotencyRequestInterceptor } from './http/idempotency.interceptor';

export { IdempotencyModule } from './http/idempotency.module';
export type {
  IdempotencyModuleAsyncOptions,
  IdempotencyModuleRootOptions,
} from './http/idempotency.module-definition';
export { Idempotent } from './http/idempotent.decorator';

/**
 * The interceptor `@Idempotent()` attaches. Register it globally (`APP_INTERCEPTOR` with
 * `useExisting`) or add it with `@UseInterceptors()` if you like: a request still has one run.
 * Typed as a plain Nest interceptor: its constructor is the module's business.
 */
export const IdempotencyInterceptor: Type<NestInterceptor> = IdempotencyRequestInterceptor;
export { Phases } from './http/phased/phases.decorator';
export {
  IdempotentPhases,
  type ExternalStepOptions,
  type PhaseFetchInit,
} from './http/phased/idempotent-phases';
export { LeaseLostError } from './http/phased/lease-lost.error';
export { childKey } from './http/phased/child-key';
export { IdempotencyCleanup, type CleanupReport } from './http/cleanup/idempotency-cleanup';
export {
  IDEMPOTENCY_DIAGNOSTICS_CHANNEL,
  type IdempotencyEvent,
  type IdempotencyEventType,
} from './http/events/idempotency-event';
export type { UnreadableRecordReason } from './http/sealing/record-cipher';
export type {
  IdempotencyEncryptionOptions,
  IdempotencyModuleOptions,
  IdempotentOptions,
  RenderedException,
  ReplayContext,
  StoredResponse,
  TenantResolver,
  WriteGuardMode,
} from './http/idempotency.options';
export { defaultShouldStore, principalTenantResolver } from './http/idempotency.defaults';
export { IdempotencyError } from './shared/idempotency-error';
export { IdempotencyProblemType } from './http/idempotency.errors';
export { IdempotencyGraphQLErrorCode } from './http/graphql/graphql-error-codes';
export { isDatabaseUnavailable } from './shared/postgres-errors';
export { underlyingRequest } from './http/http-exchange';
export {
  PROBLEM_CONTENT_TYPE,
  problemFromException,
  renderProblem,
  type ProblemDetails,
} from './http/problem-details';
export {
  canonicalJson,
  MAX_BODY_DEPTH,
  requestFingerprint,
  type FingerprintInput,
} from './http/fingerprint';
export type { UploadedFileDigest } from './http/request-body';
export { IdempotencyKeyEntity } from './http/idempotency-key.entity';
export { CreateIdempotencyKeys1764662400000 } from './migrations/1764662400000-create-idempotency-keys';
export { AddPhasedLeases1764748800000 } from './migrations/1764748800000-add-phased-leases';
export { AddSealedRecords1764921600400 } from './migrations/1764921600400-add-sealed-records';
export { AddStartedSteps1764921600600 } from './migrations/1764921600600-add-started-steps';

/**
 * The key table's migrations, in order; spread them into your DataSource's `migrations`. The
 * messaging tables' are `messagingMigrations`, from nestjs-pg-idempotency/messaging.
 */
export { idempotencyMigrations } from './migrations';
