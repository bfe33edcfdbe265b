import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { DemoProcess } from './demo-process';
import { ORDER_BODY, TENANT_KEYS } from './scenarios';

/** The mix of the hardening issue: one slow create, its retries piling up, other keys' creates. */
const HOLD_MS = 3000;
const DUPLICATES = 100;
const FRESH = 20;
const SAMPLE_MS = 25;

export interface SlowKeyProbe {
  /** Latency of the creates under other keys, fired while the duplicates wait. */
  freshP50Ms: number;
  freshP99Ms: number;
  /** How the duplicates were answered (409 once `lockTimeoutMs` ran out, 201 replays after). */
  duplicateStatuses: Map<number, number>;
  /** The most connections of the demo PostgreSQL saw busy (active or in a transaction) at once, and waiting on a lock. */
  peakBusyConnections: number;
  peakLockWaits: number;
}

/**
 * One slow create (`X-Demo-Fault: delay=3000`), a hundred duplicates of its key, then twenty
 * creates under fresh keys, on a demo started with `DEMO_FAULTS=1`. While they run, PostgreSQL's
 * view of the demo's connections is sampled every 25 ms.
 */
export async function probeSlowKey(demo: DemoProcess, databaseUrl: string): Promise<SlowKeyProbe> {
  const monitor = new Client({ connectionString: databaseUrl });
  await monitor.connect();
  let peakBusyConnections = 0;
  let peakLockWaits = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await monitor.query<{ busy: number; waiting: number }>(
        `SELECT count(*) FILTER (WHERE state <> 'idle')::int AS busy,
                count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting
           FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      peakBusyConnections = Math.max(peakBusyConnections, rows[0].busy);
      peakLockWaits = Math.max(peakLockWaits, rows[0].waiting);
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();
  try {
    const create = async (key: string, headers: Record<string, string> = {}) => {
      const started = performance.now();
      const response = await fetch(`${demo.url}/v1/orders`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: TENANT_KEYS[0],
          'idempotency-key': key,
          ...headers,
        },
        body: ORDER_BODY,
      });
      await response.arrayBuffer();
      return { status: response.status, ms: performance.now() - started };
    };
    const slowKey = `probe-${randomUUID()}`;
    const holder = create(slowKey, { 'x-demo-fault': `delay=${HOLD_MS}` });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const duplicates = Array.from({ length: DUPLICATES }, () => create(slowKey));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const fresh = await Promise.all(
      Array.from({ length: FRESH }, () => create(`probe-${randomUUID()}`)),
    );
    await holder;
    const duplicateStatuses = new Map<number, number>();
    for (const { status } of await Promise.all(duplicates)) {
      duplicateStatuses.set(status, (duplicateStatuses.get(status) ?? 0) + 1);
    }
    const failed = fresh.filter(({ status }) => status !== 201);
    if (failed.length > 0)
      throw new Error(
        `slow-key probe: ${failed.length} fresh creates failed (${failed[0].status})`,
      );
    const latencies = fresh.map(({ ms }) => ms).sort((a, b) => a - b);
    const at = (fraction: number) =>
      latencies[Math.min(latencies.length - 1, Math.ceil(fraction * latencies.length) - 1)];
    return {
      freshP50Ms: at(0.5),
      freshP99Ms: at(0.99),
      duplicateStatuses,
      peakBusyConnections,
      peakLockWaits,
    };
  } finally {
    sampling = false;
    await sampler;
    await monitor.end();
  }
}

export function formatSlowKeyProbe(probe: SlowKeyProbe): string {
  const statuses = [...probe.duplicateStatuses]
    .map(([status, count]) => `${count}x ${status}`)
    .join(', ');
  return [
    `slow key: 1 create held ${HOLD_MS} ms, ${DUPLICATES} duplicates of its key, then ${FRESH} creates under fresh keys`,
    `  fresh creates: p50 ${probe.freshP50Ms.toFixed(1)} ms, p99 ${probe.freshP99Ms.toFixed(1)} ms (the held create answers after ${HOLD_MS} ms)`,
    `  demo connections busy at most ${probe.peakBusyConnections} (pool of 20), ${probe.peakLockWaits} at most in a lock wait; duplicates: ${statuses}`,
  ].join('\n');
}
