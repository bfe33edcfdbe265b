import type { ExecutionContext } from '@nestjs/common';
import { assertTimerBound } from '../shared/timer-bound';
import { underlyingRequest } from './http-exchange';
import type {
  IdempotencyEncryptionOptions,
  IdempotencyModuleOptions,
  TenantResolver,
  WriteGuardMode,
} from './idempotency.options';
import { renderProblem } from './problem-details';
import { KEY_BYTES, MAX_KEY_ID_BYTES, type SealingKey } from './sealing/record-cipher';

/** Statuses that say "try again later": replaying them would block an honest retry for good. */
const RETRYABLE_CLIENT_ERRORS = new Set([408, 409, 425, 429]);

/** The default outcome policy: it looks at the status alone. */
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

/** No keys: encryption off. */
export interface ResolvedEncryptionOptions {
  keys: SealingKey[];
  unsealedRows: 'replay' | 'refuse';
}

export type ResolvedIdempotencyOptions = Required<
  Omit<
    IdempotencyModuleOptions,
    'onReplay' | 'onEvent' | 'transactionConnectionName' | 'cleanup' | 'replayCache' | 'encryption'
  >
> &
  Pick<IdempotencyModuleOptions, 'onReplay' | 'onEvent' | 'transactionConnectionName'> & {
    cleanup: ResolvedCleanupOptions;
    replayCache: ResolvedReplayCacheOptions;
    encryption: ResolvedEncryptionOptions;
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
    writeGuard: options.writeGuard ?? 'throw',
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
    encryption: resolveEncryption(options.encryption),
    cleanup: {
      enabled: options.cleanup !== false && (options.cleanup?.enabled ?? true),
      intervalSeconds: (options.cleanup || undefined)?.intervalSeconds ?? 300,
      batchSize: (options.cleanup || undefined)?.batchSize ?? 1000,
    },
  };
  // A header name is an HTTP token (RFC 9110): anything else is never sent, and every request
  // on a required route would be a 400.
  if (typeof resolved.headerName !== 'string' || !HTTP_TOKEN.test(resolved.headerName)) {
    throw new Error(
      `IdempotencyModule: option headerName must be an HTTP header name, got ${describeValue(resolved.headerName)}`,
    );
  }
  assertPositiveInteger('maxKeyLength', resolved.maxKeyLength);
  assertPositiveInteger('lockTimeoutMs', resolved.lockTimeoutMs);
  assertPositiveInteger('maxResponseBytes', resolved.maxResponseBytes);
  assertWriteGuardMode('IdempotencyModule: option writeGuard', resolved.writeGuard);
  assertPositiveInteger('ttlSeconds', resolved.ttlSeconds);
  assertPositiveInteger('retryAfterSeconds', resolved.retryAfterSeconds);
  assertPositiveInteger('leaseSeconds', resolved.leaseSeconds);
  assertPositiveInteger('cleanup.intervalSeconds', resolved.cleanup.intervalSeconds);
  assertTimerBound('IdempotencyModule', 'lockTimeoutMs', resolved.lockTimeoutMs, 1);
  assertTimerBound(
    'IdempotencyModule',
    'cleanup.intervalSeconds',
    resolved.cleanup.intervalSeconds,
    1000,
  );
  assertPositiveInteger('cleanup.batchSize', resolved.cleanup.batchSize);
  assertPositiveInteger('replayCache.maxEntries', resolved.replayCache.maxEntries);
  assertPositiveInteger('replayCache.maxAgeSeconds', resolved.replayCache.maxAgeSeconds);
  assertPositiveInteger('replayCache.maxBodyBytes', resolved.replayCache.maxBodyBytes);
  return resolved;
}

/** Checks the keyring at start-up: a mistake here would otherwise surface as 500s on replays. */
function resolveEncryption(
  encryption: IdempotencyEncryptionOptions | undefined,
): ResolvedEncryptionOptions {
  if (encryption === undefined) return { keys: [], unsealedRows: 'replay' };
  const fail = (problem: string): never => {
    throw new Error(`IdempotencyModule: option encryption.${problem}`);
  };
  if (!Array.isArray(encryption.keys) || encryption.keys.length === 0)
    fail('keys must list at least one key (omit encryption to store in plain)');
  const unsealedRows = encryption.unsealedRows ?? 'replay';
  if (unsealedRows !== 'replay' && unsealedRows !== 'refuse')
    fail(`unsealedRows must be 'replay' or 'refuse', got ${describeValue(unsealedRows)}`);
  const seen = new Set<string>();
  const keys = encryption.keys.map(({ id, key }, index): SealingKey => {
    if (typeof id !== 'string' || id === '')
      fail(`keys[${index}].id must be a non-empty string, got ${describeValue(id)}`);
    if (Buffer.byteLength(id, 'utf8') > MAX_KEY_ID_BYTES)
      fail(`keys[${index}].id must be at most ${MAX_KEY_ID_BYTES} bytes`);
    if (seen.has(id)) fail(`keys has the id "${id}" twice; each key needs its own id`);
    seen.add(id);
    return { id, key: keyBytes(key, `keys[${index}] ("${id}")`, fail) };
  });
  return { keys, unsealedRows };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The key's 32 bytes (a copy); the messages never show key material. */
function keyBytes(key: unknown, name: string, fail: (problem: string) => never): Buffer {
  if (Buffer.isBuffer(key)) {
    if (key.length !== KEY_BYTES) fail(`${name}.key must be ${KEY_BYTES} bytes, got ${key.length}`);
    return Buffer.from(key);
  }
  if (typeof key !== 'string') return fail(`${name}.key must be a Buffer or a base64 string`);
  if (!BASE64.test(key)) return fail(`${name}.key is not base64`);
  const bytes = Buffer.from(key, 'base64');
  if (bytes.length !== KEY_BYTES)
    fail(`${name}.key must decode to ${KEY_BYTES} bytes, got ${bytes.length}`);
  return bytes;
}

const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function assertPositiveInteger(name: string, value: unknown): void {
  if (!Number.isInteger(value) || (value as number) <= 0) {
    throw new Error(
      `IdempotencyModule: option ${name} must be a positive integer, got ${describeValue(value)}`,
    );
  }
}

const WRITE_GUARD_MODES: readonly unknown[] = ['throw', 'warn', 'off'] satisfies WriteGuardMode[];

/** `setting` names the option in the message; `@Idempotent()` checks its own with it too. */
export function assertWriteGuardMode(setting: string, value: unknown): void {
  if (!WRITE_GUARD_MODES.includes(value)) {
    throw new Error(`${setting} must be 'throw', 'warn' or 'off', got ${describeValue(value)}`);
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
