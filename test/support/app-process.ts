import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { findFreePort } from '../../apps/payments-api/src/database/embedded-postgres';
import { databaseUrl } from './test-app';

const MAIN = resolve(__dirname, '../../dist/apps/payments-api/apps/payments-api/src/main.js');

/** What runs: a Node.js binary, a built entry file, a working directory. */
export interface AppProgram {
  node: string;
  main: string;
  cwd?: string;
}

const DEMO: AppProgram = { node: process.execPath, main: MAIN };

/**
 * The built demo as a real OS process, on the run's database, with faults enabled; or another
 * built Nest app that answers `GET /health` (the consumer tests' scratch apps).
 */
export class AppProcess {
  private child?: ChildProcess;
  private exited?: Promise<number | null>;
  readonly logs: string[] = [];

  private constructor(
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
    private readonly program: AppProgram,
  ) {}

  /** `env` is added to the child's environment; `DATABASE_URL: undefined` means embedded. */
  static async start(
    env: NodeJS.ProcessEnv = { DATABASE_URL: databaseUrl() },
    program: AppProgram = DEMO,
  ): Promise<AppProcess> {
    const app = new AppProcess(await findFreePort(), env, program);
    await app.start();
    return app;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const { node, main, cwd } = this.program;
    if (!existsSync(main)) throw new Error(`${main} is missing: build it first ("npm test" builds the demo)`);
    const child = spawn(node, [main], {
      cwd,
      env: { ...process.env, PORT: String(this.port), DEMO_FAULTS: '1', ...this.env },
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
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the app did not become healthy in 30 s:\n${this.logs.join('')}`);
  }
}
