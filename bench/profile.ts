import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { allocationProfile } from './allocation-profile';
import { type BenchDatabase, openBenchDatabase } from './bench-database';
import { pinCpus } from './cpu-pinning';
import { DemoProcess } from './demo-process';
import {
  byLibraryFunction,
  byOwner,
  byPart,
  formatGroups,
  formatTopDifferences,
  parsePerfScript,
  type RequestProfile,
  requestProfile,
} from './perf-profile';
import { type ProfileOptions, profileOptions } from './profile-options';
import { completeReplayKeys } from './replay-keys';
import { runScenario, type ScenarioRun, warmUp } from './run-scenario';
import { chosenScenarios, type DemoVariant, TENANT_KEYS, variantEnvironment } from './scenarios';

/**
 * Node writes /tmp/perf-<pid>.map with it: perf then names JavaScript functions. Not with
 * `--interpreted-frames-native-stack`: the interpreter trampolines it makes per function are
 * freed and their addresses reused, so that hot code took the names of start-up code.
 */
const PERF_MAP_FLAG = '--perf-basic-prof-only-functions';
/** As `npm run bench` warms each scenario up by default. */
const WARMUP_SECONDS = 3;
/** How many symbols of the difference between the first two scenarios are listed. */
const TOP_SYMBOLS = 25;

/**
 * `npm run bench:profile -- --scenarios=a,b`: where a request's CPU goes, by Linux `perf` on a
 * demo process set up as in `npm run bench` (same database, scenarios, pinning, warm-up). Each
 * scenario runs under `perf record -g` in turn. The report gives microseconds of demo CPU per
 * request by part (the kernel, V8's garbage collector and inline caches, each package's
 * JavaScript), by the package on whose behalf it ran, and the library's part by function,
 * each with what the first scenario pays beyond the second.
 */
async function main(): Promise<void> {
  const options = profileOptions(process.argv.slice(2), process.env);
  if (!options.allocations) assertPerfRuns();
  const pinning = pinCpus();
  const workDirectory = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  const demos = new Map<DemoVariant, DemoProcess>();
  let database: BenchDatabase | undefined;
  try {
    database = await openBenchDatabase(process.env);
    const runId = randomUUID().slice(0, 8);
    const chosen = chosenScenarios(runId, options.scenarios, options.redisUrl !== undefined);
    // The default process always starts: it completes the keys that (c) and (h) replay.
    for (const variant of new Set<DemoVariant>([
      'default',
      ...chosen.map((each) => each.variant),
    ])) {
      const settings = variantEnvironment(variant, options.redisUrl);
      settings.NODE_OPTIONS = [process.env.NODE_OPTIONS, PERF_MAP_FLAG].filter(Boolean).join(' ');
      demos.set(
        variant,
        await DemoProcess.start(database.url, pinning?.demoCpu, options.demoNode, false, settings),
      );
    }
    const demoOf = (variant: DemoVariant): DemoProcess => {
      const demo = demos.get(variant);
      if (!demo) throw new Error(`no demo process for the ${variant} variant`);
      return demo;
    };
    await completeReplayKeys(demoOf('default'), runId, options.redisUrl !== undefined);
    for (const scenario of chosen) {
      await warmUp(demoOf(scenario.variant), database, scenario, {
        connections: options.connections,
        warmupSeconds: WARMUP_SECONDS,
      });
    }
    const profiles: { id: string; profile: RequestProfile }[] = [];
    const opened = database;
    for (const scenario of chosen) {
      const demo = demoOf(scenario.variant);
      const run = (): Promise<ScenarioRun> =>
        runScenario(demo, opened, scenario, 'profile', {
          connections: options.connections,
          durationSeconds: options.seconds,
        });
      const { profile, serverRequests, seconds, appCpuMs } = options.allocations
        ? await sampleAllocations(demo, run)
        : await recordCpu(demo, run, join(workDirectory, `${scenario.id}.perf.data`), options);
      profiles.push({ id: scenario.id, profile });
      console.log(
        `(${scenario.id}) ${scenario.title}: ${serverRequests} requests in ${seconds} s, ` +
          `${(appCpuMs / serverRequests).toFixed(3)} ms of demo CPU each by its own clock` +
          (options.allocations ? ' (slowed down by the sampling)' : ''),
      );
    }
    if (options.allocations) {
      printAllocations(profiles);
      return;
    }
    console.log(
      `\nDemo CPU per request, by what the code sampled does (perf, ${options.frequencyHz} Hz):\n`,
    );
    console.log(
      formatGroups(
        'part',
        profiles.map(({ id, profile }) => ({ id, groups: byPart(profile) })),
      ),
    );
    console.log(
      "\nThe same samples by the JavaScript they ran for: the innermost frame outside Node's core" +
        ' (a socket write for pg counts for pg, V8 work for the code that asked for it):\n',
    );
    console.log(
      formatGroups(
        'on behalf of',
        profiles.map(({ id, profile }) => ({ id, groups: byOwner(profile) })),
      ),
    );
    console.log(
      "\nThe library's part by its function that ran, or asked for, the work (its innermost frame):\n",
    );
    console.log(
      formatGroups(
        'library function',
        profiles.map(({ id, profile }) => ({ id, groups: byLibraryFunction(profile) })),
        2,
      ),
    );
    if (profiles.length >= 2) {
      console.log(
        `\nThe symbols that make most of (${profiles[0].id}) − (${profiles[1].id}), µs per request:\n`,
      );
      console.log(formatTopDifferences(profiles[0].profile, profiles[1].profile, TOP_SYMBOLS));
    }
  } finally {
    for (const demo of demos.values()) {
      const pid = demo.pid;
      await demo.stop();
      rmSync(join(tmpdir(), `perf-${pid}.map`), { force: true });
    }
    await database?.close();
    rmSync(workDirectory, { recursive: true, force: true });
  }
}

/** A scenario's run under perf, and its samples as CPU per request. */
async function recordCpu(
  demo: DemoProcess,
  run: () => Promise<ScenarioRun>,
  data: string,
  options: ProfileOptions,
): Promise<ScenarioRun & { profile: RequestProfile }> {
  const recorder = await startRecording(demo.pid, data, options.frequencyHz);
  let measured: ScenarioRun;
  try {
    measured = await run();
  } finally {
    await stopRecording(recorder);
  }
  const script = execFileSync('perf', ['script', '-i', data, '-F', 'ip,sym'], {
    encoding: 'utf8',
    maxBuffer: 1024 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const profile = requestProfile(
    parsePerfScript(script),
    options.frequencyHz,
    measured.serverRequests,
  );
  return { ...measured, profile };
}

/** A scenario's run under V8's allocation sampling, and its samples as bytes per request. */
async function sampleAllocations(
  demo: DemoProcess,
  run: () => Promise<ScenarioRun>,
): Promise<ScenarioRun & { profile: RequestProfile }> {
  await demo.startAllocationSampling(TENANT_KEYS[0]);
  let measured: ScenarioRun;
  try {
    measured = await run();
  } catch (error) {
    await demo.stopAllocationSampling(TENANT_KEYS[0]).catch(() => undefined);
    throw error;
  }
  const sampled = await demo.stopAllocationSampling(TENANT_KEYS[0]);
  return { ...measured, profile: allocationProfile(sampled, measured.serverRequests) };
}

function printAllocations(profiles: readonly { id: string; profile: RequestProfile }[]): void {
  console.log(
    '\nBytes allocated per request, by the JavaScript they were allocated for (the innermost' +
      " frame outside Node's core; V8's built-ins count for their caller):\n",
  );
  console.log(
    formatGroups(
      'allocated for',
      profiles.map(({ id, profile }) => ({ id, groups: byOwner(profile) })),
      100,
      'bytes',
    ),
  );
  console.log("\nThe library's part by its function that allocated, or asked for, the bytes:\n");
  console.log(
    formatGroups(
      'library function',
      profiles.map(({ id, profile }) => ({ id, groups: byLibraryFunction(profile) })),
      50,
      'bytes',
    ),
  );
  if (profiles.length >= 2) {
    console.log(
      `\nThe frames that allocate most of (${profiles[0].id}) − (${profiles[1].id}), bytes per request:\n`,
    );
    console.log(
      formatTopDifferences(profiles[0].profile, profiles[1].profile, TOP_SYMBOLS, 'bytes'),
    );
  }
}

/** perf must run and be allowed to sample another process; said plainly when it is not. */
function assertPerfRuns(): void {
  const probe = spawnSync('perf', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'npm run bench:profile needs Linux perf (Debian: apt-get install linux-perf), and the ' +
        'right to sample another process (root, or kernel.perf_event_paranoid <= 1)',
    );
  }
}

/** `perf record` of the demo's process, on its CPU clock; resolves once perf is attached. */
async function startRecording(
  pid: number,
  output: string,
  frequencyHz: number,
): Promise<ChildProcess> {
  const recorder = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', String(frequencyHz), '-g', '-p', String(pid), '-o', output],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let errors = '';
  recorder.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (recorder.exitCode !== null)
    throw new Error(`perf record stopped at once (${recorder.exitCode}): ${errors.trim()}`);
  return recorder;
}

/** Stops perf as Ctrl-C does, so that it writes its data file out. */
async function stopRecording(recorder: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => recorder.once('exit', resolve));
  recorder.kill('SIGINT');
  await exited;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
