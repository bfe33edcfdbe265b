import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

/**
 * What the consumer tests download, kept between runs: npm's cache and the Node.js binaries.
 * Outside the workspace, so fresh CI clones on one machine start warm; the tests work from an
 * empty one too. `CONSUMER_CACHE_DIR` moves it.
 */
export const CACHE_DIR =
  process.env.CONSUMER_CACHE_DIR ?? join(tmpdir(), 'nestjs-pg-idempotency-consumer-cache');

/**
 * Flags of every npm install: no install scripts, no audit, the cache first (a warm cache keeps
 * the transitive versions an earlier run resolved; an empty one takes the newest in range).
 */
export const NPM_INSTALL_FLAGS = [
  '--no-audit',
  '--no-fund',
  '--ignore-scripts',
  '--prefer-offline',
  `--cache=${join(CACHE_DIR, 'npm')}`,
];

/** A Node.js binary and the directory that puts it (and so npm, which runs on `node`) first on PATH. */
export interface NodeRuntime {
  version: string;
  node: string;
  binDir: string;
}

export function currentNode(): NodeRuntime {
  return {
    version: process.versions.node,
    node: process.execPath,
    binDir: dirname(process.execPath),
  };
}

/**
 * Node.js from the npm registry: `node-<platform>-<arch>` packages hold the binary itself, with
 * no install script. Installed once into the cache; nothing is downloaded from anywhere else.
 */
export async function registryNode(version: string): Promise<NodeRuntime> {
  const name = `node-${process.platform}-${process.arch}`;
  const dir = join(CACHE_DIR, `${name}-${version}`);
  const node = join(dir, 'node_modules', name, 'bin', 'node');
  if (!existsSync(node)) {
    // Installed beside its place, then renamed: a run killed halfway, or another checkout
    // installing at the same moment, never leaves a half-written runtime in the cache.
    const partial = `${dir}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    await run('npm', ['install', '--prefix', partial, ...NPM_INSTALL_FLAGS, `${name}@${version}`], {
      cwd: partial,
      runtime: currentNode(),
    });
    try {
      renameSync(partial, dir);
    } catch (error) {
      if (!existsSync(node)) throw error;
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  const reported = (
    await run(node, ['--version'], { cwd: dir, runtime: currentNode() })
  ).stdout.trim();
  if (reported !== `v${version}`)
    throw new Error(`${node} reports ${reported}, expected v${version}`);
  return { version, node, binDir: dirname(node) };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  runtime: NodeRuntime;
  /** Resolve with a non-zero exit code instead of rejecting. */
  allowFailure?: boolean;
  timeoutMs?: number;
}

/**
 * Runs a command for a scratch app with `runtime` first on PATH and none of the npm settings
 * that `npm test` exported for the workspace: a scratch app must not see the workspace.
 */
export function run(command: string, args: string[], options: RunOptions): Promise<RunResult> {
  const { cwd, runtime, allowFailure = false, timeoutMs = 10 * 60_000 } = options;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || ['INIT_CWD', 'NODE_OPTIONS', 'NODE_PATH', 'NODE_ENV'].includes(key))
      continue;
    env[key] = value;
  }
  env.PATH = [runtime.binDir, process.env.PATH].filter(Boolean).join(delimiter);
  env.npm_config_update_notifier = 'false';
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 || allowFailure) return resolve({ code, stdout, stderr });
      const how = signal ? `was killed by ${signal}` : `exited with ${code}`;
      reject(
        new Error(
          `${command} ${args.join(' ')} (in ${cwd}) ${how}\n${stdout}\n${stderr}`.trimEnd(),
        ),
      );
    });
  });
}
