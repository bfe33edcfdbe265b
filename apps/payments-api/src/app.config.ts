import type { WriteGuardMode } from 'nestjs-pg-idempotency';
import type { MessagingSettings } from './messaging/messaging.config';

/** What the demo reads from its environment, resolved once in main.ts (or by a test). */
export interface AppConfig {
  databaseUrl: string;
  /** `DEMO_FAULTS=1` enables the `X-Demo-Fault` header (and the `x-demo-fault` message header). */
  demoFaults: boolean;
  /** The card processor: `PROVIDER_URL`, else the stub started beside the API. */
  providerUrl: string;
  /** How long a charge call may take before it counts as lost. */
  providerTimeoutMs: number;
  /** Lease of phased routes (`IDEMPOTENCY_LEASE_SECONDS`, default 60). */
  leaseSeconds: number;
  /** Scheduled cleanup of expired keys: `IDEMPOTENCY_CLEANUP=off` disables it. */
  cleanup: false | { intervalSeconds: number; batchSize: number };
  /**
   * `IDEMPOTENCY_PREPARED_STATEMENTS=off` sends the claim and the record whole instead of
   * prepared, for a pooler in transaction mode in front of PostgreSQL. Unset: the library's default (on).
   */
  preparedStatements?: boolean;
  /** `IDEMPOTENCY_MAX_RESPONSE_BYTES`: the largest response an idempotent route may store. Unset: the library's default (1 MiB). */
  maxResponseBytes?: number;
  /**
   * `IDEMPOTENCY_ENCRYPTION_KEYS`: seals the stored responses and step results (the library's
   * `encryption` option); the first key seals, every key opens. Unset: stored in plain.
   */
  encryptionKeys?: { id: string; key: Buffer }[];
  /** `IDEMPOTENCY_WRITE_GUARD` (`throw`, `warn` or `off`). Unset: the library's default (`throw`). */
  writeGuard?: WriteGuardMode;
  /**
   * `IDEMPOTENCY_REPLAY_CACHE=off` answers every replay from the database, as a process that
   * never saw the key does. Unset: the library's default (on).
   */
  replayCache?: boolean;
  /** `AMQP_URL`: RabbitMQ for the order-payments consumer and the outbox relay. Unset: messaging is off. */
  amqpUrl?: string;
  /** Tuning of the messaging part; defaults in messaging/messaging.config.ts. */
  messaging?: Partial<Omit<MessagingSettings, 'amqpUrl'>>;
  /**
   * Serves `POST /graphql` (Apollo Server, code-first). On by default on Express; the demo
   * does not mount GraphQL on Fastify (`HTTP_ADAPTER=fastify`). Unset: off.
   */
  graphql?: boolean;
  /** `BENCH_ROUTES=1` adds the benchmark's routes: `POST /bench/orders`, `GET /bench/stats`. */
  benchRoutes: boolean;
  /**
   * `BENCH_REDIS_URL`: with `benchRoutes`, the Redis of `POST /bench/peer/redis/orders` (the
   * peer library on Redis). Unset: that route is not served.
   */
  benchRedisUrl?: string;
}

export const APP_CONFIG = Symbol('payments-api:config');
