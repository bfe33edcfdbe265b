import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { findFreePort } from '../apps/payments-api/src/database/embedded-postgres';
import { databaseUrl } from './support/test-app';

const ROOT = resolve(__dirname, '..');

/** `npm start` as a terminal runs it: in a process group of its own, logs kept. */
class NpmStart {
  readonly logs: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(
    readonly port: number,
    env: NodeJS.ProcessEnv,
  ) {
    this.child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    // 'close', not 'exit': the output is complete by then.
    this.exited = new Promise((done) => this.child.once('close', (code, signal) => done({ code, signal })));
  }

  /** The output without Nest's colours. */
  get text(): string {
    // eslint-disable-next-line no-control-regex
    return this.logs.join('').replace(/\x1b\[[0-9;]*m/g, '');
  }

  async waitUntilHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`npm start exited during start:\n${this.text}`);
      const status = await fetch(`http://127.0.0.1:${this.port}/health`).then(
        (response) => response.status,
        () => 0,
      );
      if (status === 200) return;
      await new Promise((done) => setTimeout(done, 200));
    }
    throw new Error(`not healthy in ${timeoutMs} ms:\n${this.text}`);
  }

  /** Ctrl-C: SIGINT to the whole group (npm, the script, the demo). */
  interrupt(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(-this.child.pid!, 'SIGINT');
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

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
  const starts: NpmStart[] = [];

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
    const started = new NpmStart(port, env);
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
    for (const started of starts) started.interrupt();
    const exits = await Promise.all(starts.map((started) => started.exited));
    expect(exits).toEqual(starts.map(() => ({ code: 0, signal: null })));
    for (const started of starts) {
      expect(started.text).toMatch(/\[PaymentsApi\] stopped$/m);
      expect(started.text).not.toMatch(/\bERROR\b/);
    }
  });
});
