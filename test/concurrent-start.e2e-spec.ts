import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { findFreePort } from '#tools/embedded-postgres';
import { ProcessGroup } from './support/process-group';
import { databaseUrl } from './support/test-app';

const ROOT = resolve(__dirname, '..');

/**
 * Four `npm start` at the same instant, on one fresh database, from a build directory nobody has
 * built into yet: one builds, the others wait for it, all four serve, the migrations run once.
 */
describe('npm start in several processes at once', () => {
  mkdirSync(resolve(ROOT, '.data'), { recursive: true });
  const buildDir = mkdtempSync(resolve(ROOT, '.data/start-builds-'));
  const database = `concurrent_start_${process.pid}`;
  const url = new URL(databaseUrl());
  url.pathname = `/${database}`;
  const starts: ProcessGroup[] = [];

  const query = async <T>(connectionString: string, sql: string): Promise<T[]> => {
    const client = new Client({ connectionString });
    await client.connect();
    try {
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  };
  const start = async () => {
    const port = await findFreePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url.toString(),
      PORT: String(port),
      PROVIDER_PORT: String(await findFreePort()),
      DEMO_BUILD_DIR: buildDir,
      AMQP_URL: '',
    };
    delete env.PROVIDER_URL;
    const started = new ProcessGroup('npm', ['start'], port, { cwd: ROOT, env });
    starts.push(started);
    return started;
  };

  beforeAll(() => query(databaseUrl(), `CREATE DATABASE ${database}`));
  afterAll(async () => {
    for (const started of starts) started.kill();
    await Promise.all(starts.map((started) => started.exited));
    await query(databaseUrl(), `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(buildDir, { recursive: true, force: true });
  });

  // A compiler run and five Nest processes: the inner waits (120 s, 60 s) decide, not Jest's 60 s.
  it('builds once, serves from all four, runs each migration once, and a later start skips the build', async () => {
    const four = await Promise.all([start(), start(), start(), start()]);
    await Promise.all(four.map((started) => started.waitUntilHealthy(120_000)));

    // One compiler run for the four (npm echoes a `nest build` script; the start script says so).
    expect(four.filter((started) => /nest build/.test(started.text))).toHaveLength(1);
    const migrations = await query<{ name: string; runs: number }>(
      url.toString(),
      'SELECT name, count(*)::int AS runs FROM migrations GROUP BY name',
    );
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.filter((migration) => migration.runs !== 1)).toEqual([]);

    // Started again while the four run: nothing to build.
    const fifth = await start();
    await fifth.waitUntilHealthy(60_000);
    expect(fifth.text).toMatch(/\[start\] build [0-9a-f]{16} is up to date/);
    expect(fifth.text).not.toMatch(/nest build/);

    // Ctrl-C under npm: every one stops cleanly.
    for (const started of starts) started.signal('SIGINT');
    const exits = await Promise.all(starts.map((started) => started.exited));
    // A process that did not exit 0 shows the end of its output: which closer failed, and why.
    const outcomes = exits.map((exit, index) =>
      exit.code === 0 && exit.signal === null
        ? 'exited 0'
        : { ...exit, output: starts[index].text.split('\n').slice(-20).join('\n') },
    );
    expect(outcomes).toEqual(starts.map(() => 'exited 0'));
    for (const started of starts) {
      expect(started.text).toMatch(/\[PaymentsApi\] stopped$/m);
      expect(started.text).not.toMatch(/\bERROR\b/);
    }
  }, 240_000);
});
