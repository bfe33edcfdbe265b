import type { ExecutionContext } from '@nestjs/common';
import { underlyingRequest } from './http-exchange';
import type { IdempotencyModuleOptions, TenantResolver } from './idempotency.options';
import { renderProblem } from './problem-details';

/** Statuses that say "try again later": replaying them would block an honest retry for good. */
const RETRYABLE_CLIENT_ERRORS = new Set([408, 409, 425, 429]);

export function defaultShouldStore(statusCode: number): boolean {
  if (statusCode >= 200 && statusCode < 300) return true;
  if (statusCode >= 400 && statusCode < 500) return !RETRYABLE_CLIENT_ERRORS.has(statusCode);
  return false;
}

/** Principal fields read by the default resolver, first match wins. */
const PRINCIPAL_FIELDS = ['tenantId', 'userId', 'id', 'sub'] as const;

/**
 * The authenticated principal a guard or Passport put on `request.user`; never a raw header.
 * No principal at all: the anonymous scope. A principal without a usable id fails closed (an
 * error, not a shared scope), so two users can never meet in one key space by accident.
 */
export const principalTenantResolver: TenantResolver = (context: ExecutionContext) => {
  // A GraphQL resolver's request too: its guard authenticated the HTTP request carrying it.
  const user = underlyingRequest<{ user?: unknown }>(context)?.user;
  if (user === undefined || user === null) return undefined;
  if (typeof user === 'object') {
    for (const field of PRINCIPAL_FIELDS) {
      const value = (user as Record<string, unknown>)[field];
      if ((typeof value === 'string' && value !== '') || typeof value === 'number')
        return String(value);
    }
  }
  throw new Error(
    'IdempotencyModule: request.user has no tenantId, userId, id or sub to scope keys by; ' +
      'set the tenantResolver option',
  );
};

export interface ResolvedCleanupOptions {
  enabled: boolean;
  intervalSeconds: number;
  batchSize: number;
}

export interface ResolvedReplayCacheOptions {
  enabled: boolean;
  maxEntries: number;
  maxAgeSeconds: number;
  maxBodyBytes: number;
}

export type ResolvedIdempotencyOptions = Required<
  Omit<
    IdempotencyModuleOptions,
    'onReplay' | 'onEvent' | 'transactionConnectionName' | 'cleanup' | 'replayCache'
  >
> &
  Pick<IdempotencyModuleOptions, 'onReplay' | 'onEvent' | 'transactionConnectionName'> & {
    cleanup: ResolvedCleanupOptions;
    replayCache: ResolvedReplayCacheOptions;
  };

export function resolveOptions(options: IdempotencyModuleOptions = {}): ResolvedIdempotencyOptions {
  const resolved: ResolvedIdempotencyOptions = {
    headerName: options.headerName ?? 'Idempotency-Key',
    maxKeyLength: options.maxKeyLength ?? 255,
    lockTimeoutMs: options.lockTimeoutMs ?? 2000,
    ttlSeconds: options.ttlSeconds ?? 86_400,
    retryAfterSeconds: options.retryAfterSeconds ?? 1,
    leaseSeconds: options.leaseSeconds ?? 60,
    tenantResolver: options.tenantResolver ?? principalTenantResolver,
    shouldStore: options.shouldStore ?? defaultShouldStore,
    storedHeaders: ['content-type', 'location', ...(options.storedHeaders ?? [])].map((h) =>
      h.toLowerCase(),
    ),
    fingerprintHeaders: (options.fingerprintHeaders ?? []).map((h) => h.toLowerCase()),
    markReplays: options.markReplays ?? false,
    preparedStatements: options.preparedStatements ?? true,
    maxResponseBytes: options.maxResponseBytes ?? 1_048_576,
    onReplay: options.onReplay,
    onEvent: options.onEvent,
    transactionConnectionName: options.transactionConnectionName,
    renderException: options.renderException ?? renderProblem,
    replayCache: {
      enabled: options.replayCache !== false,
      maxEntries: (options.replayCache || undefined)?.maxEntries ?? 1000,
      maxAgeSeconds: (options.replayCache || undefined)?.maxAgeSeconds ?? 60,
      maxBodyBytes: (options.replayCache || undefined)?.maxBodyBytes ?? 65_536,
    },
    cleanup: {
      enabled: options.cleanup !== false && (options.cleanup?.enabled ?? true),
      intervalSeconds: (options.cleanup || undefined)?.intervalSeconds ?? 300,
      batchSize: (options.cleanup || undefined)?.batchSize ?? 1000,
    },
  };
  assertPositiveInteger('maxKeyLength', resolved.maxKeyLength);
  assertPositiveInteger('lockTimeoutMs', resolved.lockTimeoutMs);
  assertPositiveInteger('maxResponseBytes', resolved.maxResponseBytes);
  assertPositiveInteger('ttlSeconds', resolved.ttlSeconds);
  assertPositiveInteger('retryAfterSeconds', resolved.retryAfterSeconds);
  assertPositiveInteger('leaseSeconds', resolved.leaseSeconds);
  assertPositiveInteger('cleanup.intervalSeconds', resolved.cleanup.intervalSeconds);
  assertPositiveInteger('cleanup.batchSize', resolved.cleanup.batchSize);
  assertPositiveInteger('replayCache.maxEntries', resolved.replayCache.maxEntries);
  assertPositiveInteger('replayCache.maxAgeSeconds', resolved.replayCache.maxAgeSeconds);
  assertPositiveInteger('replayCache.maxBodyBytes', resolved.replayCache.maxBodyBytes);
  return resolved;
}

function assertPositiveInteger(name: string, value: unknown): void {
  if (!Number.isInteger(value) || (value as number) <= 0) {
    throw new Error(
      `IdempotencyModule: option ${name} must be a positive integer, got ${describeValue(value)}`,
    );
  }
}

/**
 * The value and its type where the type is the mistake: a setting read from the environment
 * (ConfigService.get) is the string '3600', which would otherwise print as if it were 3600.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value)} (convert it with Number())`;
  if (typeof value === 'number') return String(value);
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'boolean') return `boolean ${value ? 'true' : 'false'}`;
  if (typeof value === 'bigint') return `bigint ${value.toString()}`;
  return `a value of type ${typeof value}`;
}
