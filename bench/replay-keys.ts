import type { DemoProcess } from './demo-process';
import {
  DATABASE_REPLAY_KEYS,
  databaseReplayKey,
  ORDER_BODY,
  PEER_ROUTES,
  peerReplayKey,
  replayKey,
  TENANT_KEYS,
} from './scenarios';

/**
 * Scenario (c) replays a key that completed before any measurement, and (h) cycles through
 * `DATABASE_REPLAY_KEYS` more; each is completed for each tenant, a few at a time. The peer's
 * replays, (m) and (o), send a key of their own to its routes (`redis`: the Redis one too).
 */
export async function completeReplayKeys(
  demo: DemoProcess,
  runId: string,
  redis: boolean,
): Promise<void> {
  const keys = [
    replayKey(runId),
    ...Array.from({ length: DATABASE_REPLAY_KEYS }, (_, index) => databaseReplayKey(runId, index)),
  ];
  const creates = [
    ...keys.flatMap((key) =>
      TENANT_KEYS.map((authorization) => ({ path: '/v1/orders', key, authorization })),
    ),
    // Once per route: the peer's keys are not scoped by tenant, so the other tenant's first
    // request would replay this one, or get 409 beside it.
    ...[PEER_ROUTES.memory, ...(redis ? [PEER_ROUTES.redis] : [])].map((path) => ({
      path,
      key: peerReplayKey(runId),
      authorization: TENANT_KEYS[0],
    })),
  ];
  const worker = async () => {
    for (let next = creates.shift(); next; next = creates.shift()) {
      const response = await fetch(`${demo.url}${next.path}`, {
        method: 'POST',
        headers: {
          authorization: next.authorization,
          'content-type': 'application/json',
          'idempotency-key': next.key,
        },
        body: ORDER_BODY,
      });
      if (response.status !== 201) {
        throw new Error(
          `completing the replay key ${next.key} on ${next.path} answered ${response.status}: ${await response.text()}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}
