import { median } from './bench-report';

/** One measured run of one build. */
export interface BuildRun {
  /** App CPU per request, milliseconds. */
  cpuMs: number;
  requestsPerSecond: number;
}

/** A scenario's runs on both builds, one of each per round, in round order. */
export interface ComparedScenario {
  id: string;
  title: string;
  baseline: BuildRun[];
  candidate: BuildRun[];
}

/**
 * A line per scenario: each build's median app CPU per request and req/s, and the candidate's
 * CPU over the baseline's round by round (the two runs of a round are next to each other, so a
 * slow spell moves both), with their median. Below 1: the candidate costs less.
 */
export function formatComparison(compared: readonly ComparedScenario[]): string {
  return compared
    .map(({ id, title, baseline, candidate }) => {
      if (baseline.length !== candidate.length || baseline.length === 0) {
        throw new Error(
          `(${id}): ${baseline.length} baseline and ${candidate.length} candidate runs`,
        );
      }
      const ratios = candidate.map((run, round) => run.cpuMs / baseline[round].cpuMs);
      const cpu = (runs: BuildRun[]) =>
        `${(median(runs.map((run) => run.cpuMs)) * 1000).toFixed(1)} µs`;
      const rate = (runs: BuildRun[]) =>
        median(runs.map((run) => run.requestsPerSecond)).toFixed(0);
      return [
        `(${id}) ${title}`,
        `  app CPU / request: baseline ${cpu(baseline)}, candidate ${cpu(candidate)}; req/s: baseline ${rate(baseline)}, candidate ${rate(candidate)}`,
        `  candidate / baseline, app CPU: ${median(ratios).toFixed(3)} (rounds ${ratios.map((ratio) => ratio.toFixed(3)).join(', ')})`,
      ].join('\n');
    })
    .join('\n');
}
