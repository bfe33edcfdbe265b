import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { AppProcess } from '../support/app-process';
import { libraryTarball, WORKSPACE } from './library-tarball';
import { NPM_INSTALL_FLAGS, type NodeRuntime, run, type RunResult } from './toolchain';

const FIXTURE = resolve(__dirname, 'fixture');
const LIBRARY_NAME = 'nestjs-pg-idempotency';

/** One way a user installs the library: a Nest major, a module format, a Node.js. */
export interface ConsumerVariant {
  /** Names the scratch folder and its database. */
  name: string;
  title: string;
  /** The scratch app's package.json, under test/consumer/fixture/. */
  packageJson: string;
  runtime: () => Promise<NodeRuntime>;
  /**
   * Lines of `npm ls --all` that report a peer out of range between third-party packages the
   * app installs, verbatim (without the tree's drawing): known, and not the library's to fix.
   */
  knownPeerConflicts?: string[];
}

interface LibraryManifest {
  peerDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
}

/**
 * A scratch Nest app in a fresh folder outside the workspace: the fixture's sources, its own
 * package.json (registry packages and the library's tarball, nothing else), installed with npm
 * and compiled with its own `tsc`. Node resolution from there never reaches the workspace's
 * node_modules, and no path mapping points back at the library's sources.
 */
export class ConsumerApp {
  /** Seconds per stage, for the log. */
  readonly timings: Record<string, number> = {};
  /** Every file `tsc` read to check the library's declarations (`--listFiles`). */
  declarationProgram: string[] = [];
  /** What `npm install` printed on stderr: its warnings. */
  installWarnings = '';

  private constructor(
    readonly dir: string,
    readonly runtime: NodeRuntime,
  ) {}

  static async prepare(variant: ConsumerVariant): Promise<ConsumerApp> {
    const tarball = libraryTarball();
    const started = Date.now();
    const runtime = await variant.runtime();
    const dir = mkdtempSync(join(tmpdir(), `${LIBRARY_NAME}-${variant.name}-`));
    const app = new ConsumerApp(dir, runtime);
    app.timings.node = (Date.now() - started) / 1000;
    try {
      if (!relative(WORKSPACE, dir).startsWith('..')) {
        throw new Error(
          `the scratch app must live outside the workspace, got ${dir} (check TMPDIR)`,
        );
      }
      cpSync(join(FIXTURE, 'src'), join(dir, 'src'), { recursive: true });
      cpSync(join(FIXTURE, 'entry-points'), join(dir, 'entry-points'), { recursive: true });
      for (const tsconfig of ['tsconfig.json', 'tsconfig.declarations.json'])
        cpSync(join(FIXTURE, tsconfig), join(dir, tsconfig));
      cpSync(join(FIXTURE, variant.packageJson), join(dir, 'package.json'));
      cpSync(tarball, join(dir, `${LIBRARY_NAME}.tgz`)); // the package.json names it file:./
      const installed = await app.timed('install', () =>
        app.npm(['install', ...NPM_INSTALL_FLAGS]),
      );
      app.installWarnings = installed.stderr;
      const tsc = join(dir, 'node_modules/typescript/bin/tsc');
      // The library's declarations with skipLibCheck off; the app with it on, as apps build:
      // @nestjs/graphql's and @nestjs/apollo's own declarations need packages an app without
      // gateway, ts-morph or @types/ws does not have.
      await app.timed('tsc', async () => {
        const checked = await run(
          runtime.node,
          [tsc, '-p', 'tsconfig.declarations.json', '--listFiles'],
          { cwd: dir, runtime },
        );
        app.declarationProgram = checked.stdout.split('\n').filter(Boolean);
        await run(runtime.node, [tsc, '-p', 'tsconfig.json'], { cwd: dir, runtime });
      });
    } catch (error) {
      app.remove();
      throw error;
    }
    return app;
  }

  npm(args: string[], options: { allowFailure?: boolean } = {}): Promise<RunResult> {
    return run('npm', args, { cwd: this.dir, runtime: this.runtime, ...options });
  }

  /** Where npm installed the library, from the tarball. */
  libraryDir(): string {
    return join(this.dir, 'node_modules', LIBRARY_NAME);
  }

  libraryManifest(): LibraryManifest {
    return JSON.parse(readFileSync(join(this.libraryDir(), 'package.json'), 'utf8'));
  }

  /** Runs a script of the app (a path under it) on the app's Node and parses what it prints. */
  async runJson<T>(script: string): Promise<T> {
    const { stdout } = await run(this.runtime.node, [join(this.dir, script)], {
      cwd: this.dir,
      runtime: this.runtime,
    });
    return JSON.parse(stdout) as T;
  }

  /** Starts the compiled app (`dist/main.js`) with `env` (its database, its sealing key). */
  start(env: Record<string, string>): Promise<AppProcess> {
    return this.timed('start', () =>
      AppProcess.start(env, {
        node: this.runtime.node,
        main: join(this.dir, 'dist/main.js'),
        cwd: this.dir,
      }),
    );
  }

  remove(): void {
    if (process.env.KEEP_CONSUMER_APPS === '1') return;
    rmSync(this.dir, { recursive: true, force: true });
  }

  describeTimings(): string {
    return Object.entries(this.timings)
      .map(([stage, seconds]) => `${stage} ${seconds.toFixed(1)} s`)
      .join(', ');
  }

  private async timed<T>(stage: string, work: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await work();
    } finally {
      this.timings[stage] = (Date.now() - started) / 1000;
    }
  }
}
