import { type ChildProcess, spawn } from 'node:child_process';

/**
 * A command as a terminal runs it: in a process group of its own (so Ctrl-C can reach the whole
 * group), its output kept. For the tests that stop the demo by signal, as a user or a process
 * manager does.
 */
export class ProcessGroup {
  readonly logs: string[] = [];
  /** Resolves on 'close', not 'exit': the output is complete by then. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(
    command: string,
    args: string[],
    readonly port: number,
    options: { env: NodeJS.ProcessEnv; cwd?: string },
  ) {
    this.child = spawn(command, args, {
      ...options,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => this.logs.push(chunk.toString()));
    this.exited = new Promise((done) =>
      this.child.once('close', (code, signal) => done({ code, signal })),
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The output without Nest's colours. */
  get text(): string {
    return withoutColours(this.logs.join(''));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGINT to the whole group, as Ctrl-C does; SIGTERM to the process, as `kill` or a process manager sends it. */
  signal(signal: 'SIGINT' | 'SIGTERM'): void {
    if (!this.running) return;
    if (signal === 'SIGINT') process.kill(-this.child.pid!, signal);
    else this.child.kill(signal);
  }

  /** SIGKILL to the whole group: what is left of a failed test. */
  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  async waitUntilHealthy(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`exited during start:\n${this.text}`);
      const status = await fetch(`${this.url}/health`).then(
        (response) => response.status,
        () => 0,
      );
      // Another test's app may answer on this port for a moment (two processes given one free
      // port): healthy means the answer is ours, which has logged that it listens there.
      if (status === 200 && listeningLine(this.port).test(this.text)) return;
      await sleep(100);
    }
    throw new Error(`not healthy in ${timeoutMs} ms:\n${this.text}`);
  }

  async waitForLog(pattern: RegExp, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.text)) {
      if (Date.now() > deadline) throw new Error(`no log line matching ${pattern}:\n${this.text}`);
      await sleep(20);
    }
  }
}

/** What the demo (and the consumer tests' scratch app) logs once it listens on `port`. */
export const listeningLine = (port: number) =>
  new RegExp(`listening on http://(localhost|127\\.0\\.0\\.1):${port}\\b`);

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Log text without the ANSI colour codes Nest's logger writes to a terminal. */
export function withoutColours(text: string): string {
  // eslint-disable-next-line no-control-regex -- ESC is exactly what an ANSI colour code starts with
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}
