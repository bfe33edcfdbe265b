import { randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';

/** The demo's two tenants; requests alternate between them in every scenario. */
export const TENANT_KEYS = ['Bearer demo_acme', 'Bearer demo_globex'] as const;

/** One body for every request: replays must match the fingerprint of the key's first request. */
export const ORDER_BODY = JSON.stringify({
  customerId: 'cus-bench',
  amountCents: 1250,
  currency: 'usd',
});

export type ScenarioId = 'a' | 'b' | 'c' | 'd';

export interface Scenario {
  id: ScenarioId;
  title: string;
  /** The autocannon request of this scenario for one measured run (`run` names it, e.g. `r2`). */
  request(run: string): autocannon.Request;
}

/** The number of keys the contention scenario draws from, both tenants together. */
export const CONTENTION_KEYS = 10;

/**
 * Every request is built by `setupRequest`, the baseline's too, so that the load generator does
 * the same work per request in every scenario and the ratios compare the server alone.
 */
function orderRequest(
  path: string,
  key: (tenant: number) => string | undefined,
): autocannon.Request {
  let sent = 0;
  return {
    method: 'POST',
    path,
    body: ORDER_BODY,
    setupRequest: (request) => {
      const tenant = sent++ % TENANT_KEYS.length;
      const headers: Record<string, string> = {
        ...request.headers,
        'content-type': 'application/json',
        authorization: TENANT_KEYS[tenant],
      };
      const idempotencyKey = key(tenant);
      if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
      return { ...request, headers };
    },
  };
}

/** The key that scenario (c) replays; `prepare` completes it for both tenants first. */
export function replayKey(runId: string): string {
  return `bench-${runId}-replay`;
}

export function scenarios(runId: string): Scenario[] {
  return [
    {
      id: 'a',
      title: 'create, a fresh key per request',
      request: () => orderRequest('/v1/orders', () => `bench-${randomUUID()}`),
    },
    {
      id: 'b',
      title: 'the same handler without idempotency',
      request: () => orderRequest('/bench/orders', () => undefined),
    },
    {
      id: 'c',
      title: 'replays of one completed key',
      request: () => orderRequest('/v1/orders', () => replayKey(runId)),
    },
    {
      id: 'd',
      title: `contention, ${CONTENTION_KEYS} keys`,
      // A key belongs to its tenant: 5 keys of each. Fresh keys in every run, so that each run
      // starts with a race for the first claims.
      request: (run) =>
        orderRequest('/v1/orders', () => {
          const perTenant = CONTENTION_KEYS / TENANT_KEYS.length;
          return `bench-${runId}-${run}-${Math.floor(Math.random() * perTenant)}`;
        }),
    },
  ];
}
