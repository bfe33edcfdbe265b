export { IdempotencyModule } from './idempotency.module';
export type { IdempotencyModuleAsyncOptions, IdempotencyModuleRootOptions } from './idempotency.module-definition';
export { Idempotent } from './idempotent.decorator';
export type {
  IdempotencyModuleOptions,
  IdempotentOptions,
  RenderedException,
  ReplayContext,
  StoredResponse,
  TenantResolver,
} from './idempotency.options';
export { defaultShouldStore, principalTenantResolver } from './idempotency.defaults';
export { IdempotencyProblemType } from './idempotency.errors';
export { PROBLEM_CONTENT_TYPE, problemFromException, renderProblem, type ProblemDetails } from './problem-details';
export { canonicalJson, requestFingerprint, type FingerprintInput } from './fingerprint';
export { IdempotencyKeyEntity } from './idempotency-key.entity';
export { CreateIdempotencyKeys1764662400000 } from './migrations/1764662400000-create-idempotency-keys';

/** Every migration the library ships, in order; spread it into your DataSource's `migrations`. */
export { idempotencyMigrations } from './migrations';
