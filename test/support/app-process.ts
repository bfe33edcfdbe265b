import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { findFreePort } from '#tools/embedded-postgres';
import { databaseUrl } from './test-app';
import { listeningLine } from './process-group';

const MAIN = resolve(__dirname, '../../dist/apps/payments-api/apps/payments-api/src/main.js');

/** What runs: a Node.js binary, a built entry file, a working directory. */
export interface AppProgram {
  node: string;
  main: string;
  cwd?: string;
}

const DEMO: AppProgram = { node: process.execPath, main: MAIN };

/**
 * The built demo as a real OS process, on the run's database, with faults enabled and messaging
 * off unless the test passes `AMQP_URL` (see test/messaging/support/messaging-app.ts); or another
 * built Nest app that answers `GET /health` (the consumer tests' scratch apps).
 */
export class AppProcess {
  private child?: ChildProcess;
  private exited?: Promise<number | null>;
  readonly logs: string[] = [];

  private constructor(
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
    readonly providerPort: number,
    private readonly program: AppProgram,
  ) {}

  /** `env` is added to the child's environment; `DATABASE_URL: undefined` means embedded. */
  static async start(
    env: NodeJS.ProcessEnv = { DATABASE_URL: databaseUrl() },
    program: AppProgram = DEMO,
  ): Promise<AppProcess> {
    const app = new AppProcess(await findFreePort(), env, await findFreePort(), program);
    await app.start();
    return app;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get providerUrl(): string {
    return `http://127.0.0.1:${this.providerPort}`;
  }

  /** `overrides` apply to this start only, e.g. a restart with `DEMO_FAULTS: '0'`. */
  async start(overrides: NodeJS.ProcessEnv = {}): Promise<void> {
    const { node, main, cwd } = this.program;
    if (!existsSync(main))
      throw new Error(`${main} is missing: build it first ("npm test" builds the demo)`);
    const child = spawn(node, [main], {
      cwd,
      // Each process runs its own card processor stub; all stubs share one database schema,
      // so together they behave as one provider. AMQP_URL '' keeps a developer's own AMQP_URL
      // from turning messaging on in every suite.
      env: {
        ...process.env,
        PORT: String(this.port),
        PROVIDER_PORT: String(this.providerPort),
        DEMO_FAULTS: '1',
        AMQP_URL: '',
        // Suites count the debug lines (a message skipped as already processed).
        LOG_LEVEL: 'debug',
        ...this.env,
        ...overrides,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    this.exited = new Promise((done) => child.once('exit', (code) => done(code)));
    await this.waitUntilHealthy();
  }

  /** Resolves when the process has died (for the crash fault), with its exit code. */
  waitForExit(): Promise<number | null> {
    return this.exited ?? Promise.resolve(null);
  }

  /** Resolves once the process has logged a line matching `pattern`. */
  async waitForLog(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.logs.join(''))) {
      if (Date.now() > deadline)
        throw new Error(
          `no log line matching ${pattern} in ${timeoutMs} ms:\n${this.logs.join('')}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill(signal);
    await this.waitForExit();
  }

  private async waitUntilHealthy(): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.child?.exitCode !== null) {
        throw new Error(`the app exited during start:\n${this.logs.join('')}`);
      }
      try {
        const response = await fetch(`${this.url}/health`);
        // Only our own answer counts: the process has logged that it listens on this port.
        if (response.status === 200 && listeningLine(this.port).test(this.logs.join(''))) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the app did not become healthy in 30 s:\n${this.logs.join('')}`);
  }
}
