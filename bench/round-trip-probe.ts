import { spawn } from 'node:child_process';
import { RedisStorageAdapter } from '@node-idempotency/storage-adapter-redis';
import { Pool, type PoolClient } from 'pg';

/**
 * What one round trip costs the app's CPU, by the kind of store it goes to: a create of this
 * library sends two PostgreSQL queries more than the plain handler (the claim's batch, then the
 * record's with COMMIT, on the connection its transaction holds), where the peer library sends
 * two Redis commands. Run in a process of its own on the demo's CPU, so that it is measured as
 * the demo would be.
 */
export interface RoundTripCosts {
  operations: number;
  /** CPU microseconds per query: checked out of a pg pool, and on a client already held. */
  pooledQueryUs: number;
  heldClientQueryUs: number;
  /** Per command of the peer's Redis adapter (`setIfNotExists`, then `set`); only with a Redis. */
  redisCommandUs?: number;
}

/** Loops running at once, as requests of the benchmark do. */
const CONCURRENCY = 16;
const QUERY = { name: 'round_trip_probe', text: 'SELECT $1::int AS n' } as const;
/** What the peer stores for a claim and for its record, in size: an order's response. */
const PEER_CLAIM = JSON.stringify({ status: 'in_progress', fingerprint: 'f'.repeat(64) });
const PEER_RECORD = JSON.stringify({
  status: 'completed',
  fingerprint: 'f'.repeat(64),
  response: { statusCode: 201, headers: { location: '/v1/orders/id' }, body: 'o'.repeat(195) },
});
const PROBE_KEY_TTL_MS = 60_000;

/** Runs the probe as `node round-trip-probe.js` on `cpu` (when given) and reads its answer. */
export function probeRoundTrips(
  node: string,
  cpu: number | undefined,
  databaseUrl: string,
  redisUrl: string | undefined,
  operations: number,
): Promise<RoundTripCosts> {
  const args = [__filename, databaseUrl, String(operations), ...(redisUrl ? [redisUrl] : [])];
  const [command, commandArgs] =
    cpu === undefined ? [node, args] : ['taskset', ['-c', String(cpu), node, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the round-trip probe exited with ${code}`));
      try {
        resolve(JSON.parse(output) as RoundTripCosts);
      } catch (error) {
        reject(new Error(`the round-trip probe printed no figures: ${String(error)}`));
      }
    });
  });
}

export function formatRoundTripCosts(costs: RoundTripCosts): string {
  const redis =
    costs.redisCommandUs === undefined
      ? 'no Redis given'
      : `a command of the peer's Redis adapter ${costs.redisCommandUs.toFixed(1)} µs`;
  return [
    `What one round trip costs the app's CPU (a process of its own on the demo's CPU, ${CONCURRENCY} ` +
      `loops at once, ${costs.operations} operations each kind): a query checked out of a pg pool ` +
      `${costs.pooledQueryUs.toFixed(1)} µs, a query on a pg client already held ` +
      `${costs.heldClientQueryUs.toFixed(1)} µs, ${redis}.`,
    `A create's two queries more than the plain handler (on the connection its transaction holds) ` +
      `come to about ${(2 * costs.heldClientQueryUs).toFixed(0)} µs of its app CPU over (b)` +
      (costs.redisCommandUs === undefined
        ? '.'
        : `; the peer's two Redis commands to about ${(2 * costs.redisCommandUs).toFixed(0)} µs.`),
  ].join('\n');
}

/** Why the probe's figures cannot be trusted, if they cannot; empty when they can. */
export function roundTripProblems(costs: RoundTripCosts, redisGiven: boolean): string[] {
  const figures: [string, number | undefined][] = [
    ['a query checked out of a pg pool', costs.pooledQueryUs],
    ['a query on a held pg client', costs.heldClientQueryUs],
    ...(redisGiven
      ? [['a Redis command', costs.redisCommandUs] as [string, number | undefined]]
      : []),
  ];
  return figures
    .filter(([, value]) => value === undefined || !Number.isFinite(value) || value <= 0)
    .map(([name, value]) => `round-trip probe: ${name} costs ${value} µs`);
}

/** CPU microseconds of this process per operation, `CONCURRENCY` loops sharing `operations`. */
async function cpuPerOperation(
  operations: number,
  operation: (loop: number) => Promise<unknown>,
): Promise<number> {
  const runAll = async () => {
    let started = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, loop) => {
        while (started++ < operations) await operation(loop);
      }),
    );
  };
  // The first pass warms the code up (JIT, prepared statements); the second is measured.
  await runAll();
  const before = process.cpuUsage();
  await runAll();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / operations;
}

async function measure(
  databaseUrl: string,
  operations: number,
  redisUrl?: string,
): Promise<RoundTripCosts> {
  const pool = new Pool({ connectionString: databaseUrl, max: CONCURRENCY });
  const held: PoolClient[] = [];
  let redis: RedisStorageAdapter | undefined;
  try {
    for (let loop = 0; loop < CONCURRENCY; loop++) held.push(await pool.connect());
    const heldClientQueryUs = await cpuPerOperation(operations, (loop) =>
      held[loop].query({ ...QUERY, values: [loop] }),
    );
    for (const client of held.splice(0)) client.release();
    const pooledQueryUs = await cpuPerOperation(operations, (loop) =>
      pool.query({ ...QUERY, values: [loop] }),
    );
    let redisCommandUs: number | undefined;
    if (redisUrl) {
      const connecting = new RedisStorageAdapter({ url: redisUrl });
      await connecting.connect();
      // Only a connected client is disconnected below: the adapter logs a client it never
      // opened as a failure to disconnect, a second error beside the one that ended the probe.
      redis = connecting;
      let next = 0;
      // A create of the peer: the claim of a fresh key, then its record with the response.
      redisCommandUs = await cpuPerOperation(operations, () => {
        const key = `round-trip-probe:${process.pid}:${next >> 1}`;
        return next++ % 2 === 0
          ? connecting.setIfNotExists(key, PEER_CLAIM, { ttl: PROBE_KEY_TTL_MS })
          : connecting.set(key, PEER_RECORD, { ttl: PROBE_KEY_TTL_MS });
      });
    }
    return { operations, pooledQueryUs, heldClientQueryUs, redisCommandUs };
  } finally {
    for (const client of held) client.release();
    await pool.end();
    await redis?.disconnect();
  }
}

if (require.main === module) {
  const [databaseUrl, operations, redisUrl] = process.argv.slice(2);
  measure(databaseUrl, Number(operations), redisUrl).then(
    (costs) => process.stdout.write(JSON.stringify(costs)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
