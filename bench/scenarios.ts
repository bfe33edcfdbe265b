import { randomBytes, randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';

/** The demo's two tenants; requests alternate between them in every scenario. */
export const TENANT_KEYS = ['Bearer demo_acme', 'Bearer demo_globex'] as const;

/** One body for every request: replays must match the fingerprint of the key's first request. */
export const ORDER_BODY = JSON.stringify({
  customerId: 'cus-bench',
  amountCents: 1250,
  currency: 'usd',
});

export const SCENARIO_IDS = [
  'a',
  'b',
  'c',
  'd',
  'e',
  'f',
  'g',
  'h',
  'i',
  'j',
  'k',
  'l',
  'm',
  'n',
  'o',
] as const;

export type ScenarioId = (typeof SCENARIO_IDS)[number];

/** Scenario letters given as `a,b,j`, each checked against `SCENARIO_IDS`. */
export function scenarioIds(list: string): ScenarioId[] {
  const ids = list.split(',').filter((id) => id !== '');
  for (const id of ids) {
    if (!(SCENARIO_IDS as readonly string[]).includes(id))
      throw new Error(`unknown scenario "${id}": one of ${SCENARIO_IDS.join(', ')}`);
  }
  return ids as ScenarioId[];
}

/**
 * Which demo process serves a scenario: the default one, or a twin. A setting's cost is read
 * between twins, which are started and warmed alike and each serve one scenario: `twin` with
 * the default settings, the others with one setting changed. A twin idles between its runs, so
 * each of them is preceded by unmeasured load (`rewarm` in run-scenario.ts).
 */
export type DemoVariant = 'default' | 'twin' | 'sealed' | 'unguarded' | 'uncached';

export interface Scenario {
  id: ScenarioId;
  title: string;
  variant: DemoVariant;
  /** Runs only when the benchmark has a Redis (`--redis`, `BENCH_REDIS_URL`): the peer on Redis. */
  needsRedis?: boolean;
  /** The autocannon request of this scenario for one measured run (`run` names it, e.g. `r2`). */
  request(run: string): autocannon.Request;
}

/**
 * The answers a run of scenario `id` may get. In (d) a 409 is a correct answer (the key's first
 * request is still running); anywhere else, any answer but 201 means the server was not doing
 * the work being measured.
 */
export function expectedStatuses(id: ScenarioId): readonly number[] {
  return id === 'd' ? [201, 409] : [201];
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

/**
 * How many completed keys scenario (h) cycles through, per tenant: far more than its
 * connections, so that no two requests in flight share a key (a twin in flight would hand its
 * outcome over in memory, and the replay would not be read from the database).
 */
export const DATABASE_REPLAY_KEYS = 256;

/** The `index`-th key of scenario (h); `prepare` completes each for both tenants first. */
export function databaseReplayKey(runId: string, index: number): string {
  return `bench-${runId}-db-${index}`;
}

/**
 * The routes of the peer library, `@node-idempotency/nestjs`, on the default demo process: the
 * handler of (a) and (b) behind its interceptor, its records in memory or on Redis.
 */
export const PEER_ROUTES = {
  memory: '/bench/peer/memory/orders',
  redis: '/bench/peer/redis/orders',
} as const;

/** The key that the peer's replays (m) and (o) send; `prepare` completes it on both routes. */
export function peerReplayKey(runId: string): string {
  return `bench-${runId}-peer-replay`;
}

/** Every scenario of a run; those of the peer on Redis only when `redis` is true. */
export function scenarios(runId: string, redis: boolean): Scenario[] {
  return allScenarios(runId).filter((scenario) => redis || !scenario.needsRedis);
}

/** The scenarios of `ids`, in their order; one of the peer on Redis without `redis` is refused. */
export function chosenScenarios(runId: string, ids: readonly string[], redis: boolean): Scenario[] {
  const available = scenarios(runId, redis);
  return ids.map((id) => {
    const scenario = available.find((each) => each.id === id);
    if (!scenario) throw new Error(`scenario ${id} needs a Redis for the peer: --redis=URL`);
    return scenario;
  });
}

function allScenarios(runId: string): Scenario[] {
  return [
    {
      id: 'a',
      title: 'create, a fresh key per request',
      variant: 'default',
      request: () => orderRequest('/v1/orders', () => `bench-${randomUUID()}`),
    },
    {
      id: 'b',
      title: 'the same handler without idempotency',
      variant: 'default',
      request: () => orderRequest('/bench/orders', () => undefined),
    },
    {
      // Between (b) and (a): Nest's charge for an interceptor is (j) - (b), the library's own
      // share of a create (a) - (j).
      id: 'j',
      title: 'the same handler behind a pass-through interceptor',
      variant: 'default',
      request: () => orderRequest('/bench/orders/intercepted', () => undefined),
    },
    {
      // Beside (a): the same create, the peer library's.
      id: 'l',
      title: 'create, @node-idempotency/nestjs in memory',
      variant: 'default',
      request: () => orderRequest(PEER_ROUTES.memory, () => `bench-${randomUUID()}`),
    },
    {
      id: 'n',
      title: 'create, @node-idempotency/nestjs on Redis',
      variant: 'default',
      needsRedis: true,
      request: () => orderRequest(PEER_ROUTES.redis, () => `bench-${randomUUID()}`),
    },
    {
      id: 'c',
      title: 'replays of one completed key',
      variant: 'default',
      request: () => orderRequest('/v1/orders', () => replayKey(runId)),
    },
    {
      // Beside (c): the replay target pairs the two in each round.
      id: 'g',
      title: 'a bare route (the guard, no database)',
      variant: 'default',
      request: () => orderRequest('/bench/bare', () => undefined),
    },
    {
      // Between (g) and (c): Nest's charge for an interceptor that answers is (k) / (g), the
      // library's own share of a cached replay (c) / (k).
      id: 'k',
      title: 'the bare route answered by an interceptor',
      variant: 'default',
      request: () => orderRequest('/bench/bare/answered', () => undefined),
    },
    {
      // Beside (c): the peer's replay, answered from its memory or from Redis.
      id: 'm',
      title: 'replays of one key, @node-idempotency/nestjs in memory',
      variant: 'default',
      request: () => orderRequest(PEER_ROUTES.memory, () => peerReplayKey(runId)),
    },
    {
      id: 'o',
      title: 'replays of one key, @node-idempotency/nestjs on Redis',
      variant: 'default',
      needsRedis: true,
      request: () => orderRequest(PEER_ROUTES.redis, () => peerReplayKey(runId)),
    },
    {
      id: 'd',
      title: `contention, ${CONTENTION_KEYS} keys`,
      variant: 'default',
      // A key belongs to its tenant: 5 keys of each. Fresh keys in every run, so that each run
      // starts with a race for the first claims.
      request: (run) =>
        orderRequest('/v1/orders', () => {
          const perTenant = CONTENTION_KEYS / TENANT_KEYS.length;
          return `bench-${runId}-${run}-${Math.floor(Math.random() * perTenant)}`;
        }),
    },
    {
      id: 'i',
      title: 'create, on a twin process (the baseline of (e) and (f))',
      variant: 'twin',
      request: () => orderRequest('/v1/orders', () => `bench-${randomUUID()}`),
    },
    {
      id: 'e',
      title: 'create, sealed records (encryption on)',
      variant: 'sealed',
      request: () => orderRequest('/v1/orders', () => `bench-${randomUUID()}`),
    },
    {
      id: 'f',
      title: 'create, write guard off',
      variant: 'unguarded',
      request: () => orderRequest('/v1/orders', () => `bench-${randomUUID()}`),
    },
    {
      id: 'h',
      title: 'replays from the database (cache off)',
      // Keys completed by the default process, in turn: this one caches nothing.
      variant: 'uncached',
      request: () => {
        let sent = 0;
        return orderRequest('/v1/orders', () =>
          databaseReplayKey(runId, Math.floor(sent++ / TENANT_KEYS.length) % DATABASE_REPLAY_KEYS),
        );
      },
    },
  ];
}

/**
 * What each variant's demo process gets in its environment besides the default demo's. The
 * default one serves the peer's routes, on Redis too when `redisUrl` is given.
 */
export function variantEnvironment(variant: DemoVariant, redisUrl?: string): NodeJS.ProcessEnv {
  switch (variant) {
    case 'default':
      return redisUrl ? { BENCH_REDIS_URL: redisUrl } : {};
    case 'twin':
      return {};
    case 'sealed':
      return { IDEMPOTENCY_ENCRYPTION_KEYS: `bench:${randomBytes(32).toString('base64')}` };
    case 'unguarded':
      return { IDEMPOTENCY_WRITE_GUARD: 'off' };
    case 'uncached':
      return { IDEMPOTENCY_REPLAY_CACHE: 'off' };
  }
}
