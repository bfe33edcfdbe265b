import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { findFreePort, startEmbeddedPostgres } from '#tools/embedded-postgres';
import { DEFAULT_TEST_AMQP_URL, probeBroker, redactUrl } from './broker-probe';
import { TEST_STATE } from './test-state';

/**
 * One PostgreSQL for the whole run: `DATABASE_URL` when set (use a throwaway database), else an
 * embedded one in a fresh directory, removed again by the teardown. Workers and the app
 * processes the tests spawn inherit `DATABASE_URL` from here; each app runs the migrations at
 * start, as the demo does, under an advisory lock.
 */
export default async function globalSetup(): Promise<void> {
  await checkBroker();
  if (!process.env.DATABASE_URL) {
    const dataDir = resolve(__dirname, '../../.data', `test-postgres-${process.pid}`);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const handle = await startEmbeddedPostgres({
      dataDir,
      port: await findFreePort(),
      database: 'idempotency_test',
      log: () => undefined,
      // Suites run in parallel workers and each app process keeps a pool of up to 20: the
      // default 100 leaves too little room when several suites start apps at the same moment.
      maxConnections: 300,
    });
    TEST_STATE.embedded = { handle, dataDir };
    process.env.DATABASE_URL = handle.url;
    const moved =
      handle.dataDir === dataDir
        ? ''
        : ` (data in ${handle.dataDir}: the postgres user cannot reach ${dataDir})`;
    console.log(`\nDATABASE_URL not set: embedded PostgreSQL at ${handle.url}${moved}`);
  }
}

/**
 * The broker suites (test/messaging) need a real RabbitMQ at `TEST_AMQP_URL` (default
 * amqp://guest:guest@127.0.0.1:5672). Without one they are skipped, saying why; with
 * `REQUIRE_BROKER=1` (CI) a missing broker fails the run instead. Checked before PostgreSQL
 * starts, so a failure here leaves nothing running.
 */
async function checkBroker(): Promise<void> {
  const url = (process.env.TEST_AMQP_URL ||= DEFAULT_TEST_AMQP_URL);
  const probe = await probeBroker(url);
  if (probe.up) {
    process.env.TEST_BROKER_STATUS = 'up';
    return;
  }
  const reason = `no RabbitMQ at ${redactUrl(url)} (${probe.reason})`;
  if (process.env.REQUIRE_BROKER === '1') {
    throw new Error(
      `REQUIRE_BROKER=1 but ${reason}: start it (rabbitmq-server -detached) or set TEST_AMQP_URL`,
    );
  }
  process.env.TEST_BROKER_STATUS = reason;
  console.warn(
    `\n${reason}: the RabbitMQ suites are SKIPPED. Start RabbitMQ, or set REQUIRE_BROKER=1 to fail instead.`,
  );
}
