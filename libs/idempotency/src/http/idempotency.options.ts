import type { ExecutionContext, HttpException } from '@nestjs/common';
import type { IdempotencyEvent } from './events/idempotency-event';

/** What the library stores and replays for one request. */
export interface StoredResponse {
  statusCode: number;
  /** Lower-cased header names; only the allowlisted ones are kept (Set-Cookie as an array). */
  headers: Record<string, string | string[]>;
  /** The exact bytes sent to the first caller. */
  body: Buffer;
}

/** A rendered error: what a stored (deterministic) failure looks like on the wire. */
export interface RenderedException {
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/** Passed to `onReplay`; the hook may add headers before the stored response is sent. */
export interface ReplayContext {
  tenantId: string;
  scope: string;
  /** A short, non-reversible hash of the key: safe to log. */
  keyHash: string;
  response: StoredResponse;
  setHeader(name: string, value: string): void;
}

/** Option `encryption`: seals what a key row keeps of a response and of each phased step. */
export interface IdempotencyEncryptionOptions {
  /**
   * AES-256 keys, 32 bytes each (a Buffer, or a string in base64). The first seals; every
   * listed key opens. Rotate by listing a new key (last until every process has it, then
   * first) and keeping the old one until the rows it sealed have expired. Ids must be unique and
   * non-empty; an id is stored in each sealed record, so never reuse one for other key material.
   */
  keys: Array<{ id: string; key: Buffer | string }>;
  /**
   * Rows written without encryption (before it was turned on): `'replay'` (default) replays them
   * as they are until they expire; `'refuse'` answers them like a record that cannot be opened
   * (a 500 problem, the handler not run again).
   */
  unsealedRows?: 'replay' | 'refuse';
}
/** See `IdempotencyModuleOptions.writeGuard`. */
export type WriteGuardMode = 'throw' | 'warn' | 'off';

/** Resolves the tenant a key belongs to; `undefined` means the anonymous scope. */
export type TenantResolver = (
  context: ExecutionContext,
) => string | undefined | Promise<string | undefined>;

export interface IdempotencyModuleOptions {
  /** Request header that carries the key. Default `Idempotency-Key`. */
  headerName?: string;
  /** Longest accepted key, in characters. Default 255. */
  maxKeyLength?: number;
  /** How long a duplicate waits for an in-flight twin before it gets 409. Default 2000 ms. */
  lockTimeoutMs?: number;
  /** How long a key is remembered. Default 86400 s (24 h). */
  ttlSeconds?: number;
  /** `Retry-After` sent with 409 responses. Default 1 s. */
  retryAfterSeconds?: number;
  /**
   * Phased routes: how long a claim stays locked to its attempt before a retry may take it
   * over. Default 60 s. Keep it well above the handler's p99 latency: a retry that takes over
   * a lease from an attempt that is only slow runs the remaining phases a second time.
   */
  leaseSeconds?: number;
  /**
   * Who owns a key. Default: the authenticated principal at `request.user`
   * (`tenantId`, else `userId`, else `id`, else `sub`); no principal means one shared anonymous scope.
   * Never read a client-controlled header here unless you authenticate it.
   */
  tenantResolver?: TenantResolver;
  /**
   * Whether a handler outcome is stored and replayed (deterministic) or released so a retry
   * runs again (transient). Called with the status and, when the handler threw, the error
   * itself (a non-HTTP error as status 500); a returned error status comes with `undefined`.
   * Default (`defaultShouldStore`): 2xx and 4xx are stored except 408, 409, 425 and 429;
   * everything else, thrown non-HTTP errors included, is released. Return true for an error
   * that follows an effect committed elsewhere (a charge the provider took), so the retry
   * replays it instead of repeating the effect. A stored non-HTTP error is recorded as a 500
   * problem without its message.
   */
  shouldStore?: (statusCode: number, error: unknown) => boolean;
  /** Response headers stored and replayed besides `content-type` and `location`. Default none. */
  storedHeaders?: string[];
  /** Request headers that take part in the fingerprint. Default none. */
  fingerprintHeaders?: string[];
  /** Add `Idempotent-Replayed: true` to replays. Default false (a replay is indistinguishable). */
  markReplays?: boolean;
  /** Called before a replay is sent; may add headers. */
  onReplay?: (replay: ReplayContext) => void | Promise<void>;
  /**
   * The `connectionName` given to `ClsPluginTransactional`, when the app names its
   * transactional connection (several data sources). Default: the unnamed one.
   */
  transactionConnectionName?: string;
  /**
   * Atomic mode: prepare the claim and the record once per connection (SQL `PREPARE`, then
   * `EXECUTE`), so PostgreSQL does not parse and plan them for every request. Default true.
   * Set false behind a pooler in transaction mode (PgBouncer `pool_mode = transaction`), whose
   * server sessions change between transactions: with the default, the library recovers from
   * each lost statement (SQLSTATE 26000) with a retry and a new PREPARE, and after the third loss
   * warns and stops preparing.
   */
  preparedStatements?: boolean;
  /**
   * The largest response body, stored or replayed, in bytes. Default 1048576 (1 MiB). A larger
   * one cannot be stored, so it must not commit either: the transaction rolls back, the key is
   * released, and the answer is a 500 problem (`urn:idempotency:response-too-large`).
   */
  maxResponseBytes?: number;
  /**
   * Replays of completed keys from process memory, without a database round trip (a completed
   * row never changes before it expires). Default `{ maxEntries: 1000, maxAgeSeconds: 60,
   * maxBodyBytes: 65536 }`; `false` turns it off. An entry never outlives its row's expiry; a row
   * deleted by hand is still replayed from memory for up to `maxAgeSeconds`.
   */
  /**
   * What to do when an `@Idempotent()` handler writes through TypeORM (insert, update, remove,
   * soft remove, recover) on a connection other than the request's transaction, e.g. through an
   * injected repository instead of `txHost.tx`: such a write commits even when the key is
   * released, and the retry writes again. `'throw'` (default) refuses it before it reaches the
   * database and fails the request (500, `urn:idempotency:write-outside-transaction`, nothing
   * commits, the key is released); `'warn'` logs it once per route and entity and lets it
   * through; `'off'` does not watch. Only the transactional DataSource's TypeORM writes are seen.
   */
  writeGuard?: WriteGuardMode;
  replayCache?: false | { maxEntries?: number; maxAgeSeconds?: number; maxBodyBytes?: number };
  /**
   * Deletes keys past their time to live on a timer inside the app, in batches.
   * Default `{ enabled: true, intervalSeconds: 300, batchSize: 1000 }`; `false` turns it off
   * (run `IdempotencyCleanup.purgeExpired()` from a job of your own then).
   */
  cleanup?: false | { enabled?: boolean; intervalSeconds?: number; batchSize?: number };
  /**
   * Called for every outcome (claimed, replayed, in_progress, lock_timeout,
   * fingerprint_mismatch, rejected_key, unfingerprintable_request, unreadable_record, completed,
   * stored_failure, released) with the claim and request durations, and for every cleanup batch
   * (expired_removed): the one hook for metrics.
   * Must be fast and must not throw (a throw is logged and ignored).
   */
  onEvent?: (event: IdempotencyEvent) => void;
  /**
   * Seals the stored response (body and headers) and the phased steps' results with
   * AES-256-GCM, bound to their tenant, scope and key. Default: off (stored in plain). A row no
   * listed key opens fails closed with a 500 problem (`urn:idempotency:sealed-record-unreadable`).
   */
  encryption?: IdempotencyEncryptionOptions;
  /** Renders an HttpException that is stored. Default: RFC 9457 problem details. */
  renderException?: (exception: HttpException) => RenderedException;
}

/** Per-route settings given to `@Idempotent()`. */
export interface IdempotentOptions {
  /** Reject requests without a key (400). Default true; when false such requests run unprotected. */
  required?: boolean;
  /** Overrides the module's time to live for this route. */
  ttlSeconds?: number;
  /**
   * Phased mode: the claim commits first with a lease, and the handler advances through
   * recovery points (`@Phases()`), each committed on its own. For handlers that call other
   * systems. A phased route always requires a key. Default false (atomic mode).
   */
  phased?: boolean;
  /** Phased mode: overrides the module's lease for this route. */
  leaseSeconds?: number;
  /** Overrides the module's `writeGuard` for this route. */
  writeGuard?: WriteGuardMode;
  /**
   * Names the key space. Default: the method and route pattern, e.g. `POST /v1/orders`.
   * Give two routes one scope only when one key must never be used on both.
   */
  scope?: string;
}
