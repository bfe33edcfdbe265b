import type { DemoProcess } from './demo-process';
import {
  DATABASE_REPLAY_KEYS,
  databaseReplayKey,
  ORDER_BODY,
  replayKey,
  TENANT_KEYS,
} from './scenarios';

/**
 * Scenario (c) replays a key that completed before any measurement, and (h) cycles through
 * `DATABASE_REPLAY_KEYS` more; each is completed for each tenant, a few at a time.
 */
export async function completeReplayKeys(demo: DemoProcess, runId: string): Promise<void> {
  const keys = [
    replayKey(runId),
    ...Array.from({ length: DATABASE_REPLAY_KEYS }, (_, index) => databaseReplayKey(runId, index)),
  ];
  const creates = keys.flatMap((key) =>
    TENANT_KEYS.map((authorization) => ({ key, authorization })),
  );
  const worker = async () => {
    for (let next = creates.shift(); next; next = creates.shift()) {
      const response = await fetch(`${demo.url}/v1/orders`, {
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
          `completing the replay key ${next.key} answered ${response.status}: ${await response.text()}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}
