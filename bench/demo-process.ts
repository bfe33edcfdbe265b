import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { SamplingHeapProfile } from './allocation-profile';
import { findFreePort } from '#tools/embedded-postgres';
import type { BenchStats } from '../apps/payments-api/src/bench/bench-stats.service';
import { DEMO_MAIN } from './repo-paths';

const LOG_TAIL_LINES = 40;

/**
 * The built demo in a process of its own, as `npm start` runs it, with `BENCH_ROUTES=1`: the
 * load generator and the server must not share one event loop, or each would slow the other.
 */
export class DemoProcess {
  private readonly logTail: string[] = [];
  private exitCode?: number | null;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {
    const keep = (chunk: Buffer) => {
      this.logTail.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line.trim() !== ''),
      );
      this.logTail.splice(0, Math.max(0, this.logTail.length - LOG_TAIL_LINES));
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('exit', (code) => (this.exitCode = code));
  }

  /**
   * `node`: the Node.js binary to run it with. `faults`: `DEMO_FAULTS=1`, for the probes that
   * need `X-Demo-Fault`; never for the measured rounds. `settings`: environment variables of a
   * variant (encryption on, say).
   */
  static async start(
    databaseUrl: string,
    /**
     * The CPU to start it on (`taskset`); where this process may run when undefined. Required, so
     * that no caller forgets it: a demo started without it shared the load generator's CPU.
     */
    cpu: number | undefined,
    node: string,
    faults = false,
    settings: NodeJS.ProcessEnv = {},
    /** A command that runs Node.js under it (valgrind, say); it makes start-up slow. */
    wrapper: readonly string[] = [],
    /** The demo's entry file: this checkout's build, or another build's (`npm run bench:compare`). */
    main: string = DEMO_MAIN,
  ): Promise<DemoProcess> {
    if (!existsSync(main)) throw new Error(`${main} is missing: run "npm run build" first`);
    const port = await findFreePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      // Its card processor stub idles on a port of its own: the benchmark never pays.
      PROVIDER_PORT: String(await findFreePort()),
      BENCH_ROUTES: '1',
      ...settings,
    };
    delete env.PROVIDER_URL;
    // The peer's Redis only where a variant's settings give it (the default process).
    if (!('BENCH_REDIS_URL' in settings)) delete env.BENCH_REDIS_URL;
    if (faults) env.DEMO_FAULTS = '1';
    else delete env.DEMO_FAULTS;
    const [command, ...args] = [
      ...(cpu === undefined ? [] : ['taskset', '-c', String(cpu)]),
      ...wrapper,
      node,
      main,
    ];
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const demo = new DemoProcess(child, `http://127.0.0.1:${port}`);
    await demo.waitUntilHealthy(wrapper.length > 0 ? 600 : 60);
    if (cpu !== undefined) demo.assertRunsOn(cpu);
    return demo;
  }

  /** The demo's counters; `authorization` is any API key of the demo. */
  async stats(authorization: string): Promise<BenchStats> {
    const response = await fetch(`${this.url}/bench/stats`, { headers: { authorization } });
    if (response.status !== 200) throw new Error(`GET /bench/stats answered ${response.status}`);
    return (await response.json()) as BenchStats;
  }

  /** Starts V8's allocation sampling in the demo (`BenchAllocationsController`). */
  async startAllocationSampling(authorization: string): Promise<void> {
    await this.post('/bench/allocations/start', authorization, 204);
  }

  /** Stops it and returns V8's sampling heap profile. */
  async stopAllocationSampling(authorization: string): Promise<SamplingHeapProfile> {
    const response = await this.post('/bench/allocations/stop', authorization, 200);
    return (await response.json()) as SamplingHeapProfile;
  }

  private async post(path: string, authorization: string, expected: number): Promise<Response> {
    const response = await fetch(`${this.url}${path}`, {
      method: 'POST',
      headers: { authorization },
    });
    if (response.status !== expected) throw new Error(`POST ${path} answered ${response.status}`);
    return response;
  }

  /**
   * The counters once no request holds a connection any more, three readings in a row, so a
   * round's round trips are complete (a request between two of its statements holds one).
   */
  async settledStats(authorization: string): Promise<BenchStats> {
    const deadline = Date.now() + 10_000;
    for (let idleReadings = 0; ;) {
      const stats = await this.stats(authorization);
      idleReadings = stats.busyConnections === 0 ? idleReadings + 1 : 0;
      if (idleReadings === 3) return stats;
      if (Date.now() > deadline)
        throw new Error(`${stats.busyConnections} connections still busy after 10 s`);
      await sleep(20);
    }
  }

  /** Checks the CPUs the kernel lets the process run on: a figure taken elsewhere misleads. */
  private assertRunsOn(cpu: number): void {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const allowed = /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1];
    if (allowed !== String(cpu)) {
      throw new Error(`the demo process runs on CPUs ${allowed ?? '?'}, not on CPU ${cpu} alone`);
    }
  }

  /** The demo's own process id (`taskset` execs it in place). */
  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error('the demo process did not start');
    return pid;
  }

  logs(): string {
    return this.logTail.join('\n');
  }

  async stop(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise((done) => this.child.once('exit', done));
    this.child.kill('SIGTERM');
    await exited;
  }

  private async waitUntilHealthy(seconds: number): Promise<void> {
    const deadline = Date.now() + seconds * 1000;
    while (Date.now() < deadline) {
      if (this.exitCode !== undefined)
        throw new Error(`the demo exited during start:\n${this.logs()}`);
      try {
        if ((await fetch(`${this.url}/health`)).status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`the demo did not become healthy in ${seconds} s:\n${this.logs()}`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The version of the Node.js binary at `node`; fails loudly for anything that is not one. */
export function nodeVersion(node: string): string {
  try {
    return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  } catch (error) {
    throw new Error(`the demo's Node.js "${node}" does not run`, { cause: error });
  }
}
