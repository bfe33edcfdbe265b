import { MAX_TIMER_MS } from './timer-bound';

/**
 * Work that runs every `intervalMs` in the background of an app (the cleanups). A run still
 * going makes the next tick skip instead of piling up, the timer never keeps the process alive,
 * and `stop()` ends a run in flight at its next step (its `signal` aborts) and waits for it, so
 * shutdown neither cuts a batch in half nor waits for a backlog to drain.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopping = new AbortController();

  constructor(
    private readonly work: (signal: AbortSignal) => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    if (!(intervalMs > 0 && intervalMs <= MAX_TIMER_MS))
      throw new RangeError(`interval must be 1 to ${MAX_TIMER_MS} ms, got ${intervalMs}`);
    clearInterval(this.timer);
    if (this.stopping.signal.aborted) this.stopping = new AbortController(); // started again after stop()
    this.timer = setInterval(() => {
      if (this.stopping.signal.aborted) return;
      this.running ??= this.work(this.stopping.signal)
        .catch(this.onError)
        .finally(() => (this.running = undefined));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }
}

/**
 * Runs `batch` (one bounded DELETE, returning its row count) until a batch removes fewer than
 * `batchSize` rows, `maxBatches` ran or `signal` aborts: short statements, short locks, however
 * much is due.
 */
export async function drainInBatches(
  batch: () => Promise<number>,
  batchSize: number,
  maxBatches = Number.POSITIVE_INFINITY,
  signal?: AbortSignal,
): Promise<{ removed: number; batches: number }> {
  // A batch size of 0 would never remove fewer than it may: the loop would not end.
  if (!Number.isInteger(batchSize) || batchSize <= 0) {
    throw new RangeError(`batchSize must be a positive integer, got ${String(batchSize)}`);
  }
  if (!(
    maxBatches === Number.POSITIVE_INFINITY ||
    (Number.isInteger(maxBatches) && maxBatches > 0)
  )) {
    throw new RangeError(`maxBatches must be a positive integer, got ${String(maxBatches)}`);
  }
  let removed = 0;
  let batches = 0;
  while (batches < maxBatches && !signal?.aborted) {
    const count = await batch();
    batches++;
    removed += count;
    if (count < batchSize) break;
  }
  return { removed, batches };
}
