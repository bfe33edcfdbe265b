import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { findFreePort } from '#tools/embedded-postgres';
import { AppProcess } from './support/app-process';
import { withoutColours } from './support/process-group';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from './support/http';

/** `npm start` without DATABASE_URL, killed with -9, started again on the same data. */
describe('the demo on its embedded PostgreSQL', () => {
  mkdirSync(resolve(__dirname, '../.data'), { recursive: true });
  const dataDir = mkdtempSync(resolve(__dirname, '../.data/embedded-restart-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as its own user when the tests run as root
  let app: AppProcess | undefined;
  let clusterDir: string | undefined;

  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    // Elsewhere when the postgres user cannot reach the checkout (running as root).
    if (clusterDir) rmSync(clusterDir, { recursive: true, force: true });
  });

  it('starts again after kill -9 left its PostgreSQL orphaned, with the data intact', async () => {
    const env = {
      DATABASE_URL: undefined,
      EMBEDDED_PG_DIR: resolve(dataDir, 'pgdata'),
      EMBEDDED_PG_PORT: String(await findFreePort()),
    };
    app = await AppProcess.start(env);
    clusterDir = /DATABASE_URL is not set: .*, data in (\S+)/.exec(
      withoutColours(app.logs.join('')),
    )?.[1];
    expect(clusterDir).toBeDefined();
    const key = uniqueKey();
    const body = JSON.stringify({ customerId: uniqueCustomer(), amountCents: 100 });
    const headers = { authorization: ACME.authorization, 'idempotency-key': key };
    const created = await postRaw(app.url, '/v1/orders', body, headers);
    expect(created.status).toBe(201);
    const orphan = Number(
      readFileSync(resolve(clusterDir!, 'postmaster.pid'), 'utf8').split('\n')[0],
    );

    await app.stop('SIGKILL');
    expect(() => process.kill(orphan, 0)).not.toThrow(); // the postmaster outlived its parent

    app = await AppProcess.start(env);
    const replay = await postRaw(app.url, '/v1/orders', body, headers);
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(created.text);
  });
});
