/**
 * Work that runs every `intervalMs` in the background of an app (the cleanups). A run still
 * going makes the next tick skip instead of piling up, the timer never keeps the process alive,
 * and `stop()` waits for a run in flight, so shutdown does not cut a batch in half.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly work: () => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      this.running ??= this.work()
        .catch(this.onError)
        .finally(() => (this.running = undefined));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}

/**
 * Runs `batch` (one bounded DELETE, returning its row count) until a batch removes fewer than
 * `batchSize` rows or `maxBatches` ran: short statements, short locks, however much is due.
 */
export async function drainInBatches(
  batch: () => Promise<number>,
  batchSize: number,
  maxBatches = Number.POSITIVE_INFINITY,
): Promise<{ removed: number; batches: number }> {
  let removed = 0;
  let batches = 0;
  while (batches < maxBatches) {
    const count = await batch();
    batches++;
    removed += count;
    if (count < batchSize) break;
  }
  return { removed, batches };
}
