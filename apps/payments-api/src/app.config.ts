/** What the demo reads from its environment, resolved once in main.ts (or by a test). */
export interface AppConfig {
  databaseUrl: string;
  /** `DEMO_FAULTS=1` enables the `X-Demo-Fault` header. */
  demoFaults: boolean;
  /** The card processor: `PROVIDER_URL`, else the stub started beside the API. */
  providerUrl: string;
  /** How long a charge call may take before it counts as lost. */
  providerTimeoutMs: number;
  /** Lease of phased routes (`IDEMPOTENCY_LEASE_SECONDS`, default 60). */
  leaseSeconds: number;
  /** `BENCH_ROUTES=1` adds the benchmark's routes: `POST /bench/orders`, `GET /bench/stats`. */
  benchRoutes: boolean;
}

export const APP_CONFIG = Symbol('payments-api:config');
