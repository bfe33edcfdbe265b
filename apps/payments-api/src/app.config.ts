/** What the demo reads from its environment, resolved once in main.ts (or by a test). */
export interface AppConfig {
  databaseUrl: string;
  /** `DEMO_FAULTS=1` enables the `X-Demo-Fault` header. */
  demoFaults: boolean;
}

export const APP_CONFIG = Symbol('payments-api:config');
