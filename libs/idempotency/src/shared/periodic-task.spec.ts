import { setTimeout as sleep } from 'node:timers/promises';
import { drainInBatches, PeriodicTask } from './periodic-task';

describe('PeriodicTask with drainInBatches', () => {
  it('ends a run in flight at its next batch when stopped: a backlog never holds up shutdown', async () => {
    let batches = 0;
    // A backlog that does not drain: every batch is full (keys expiring as fast as they go),
    // up to a safety net that lets a regression fail instead of hanging the test run.
    const SAFETY_NET = 200;
    const fullBatch = async () => {
      batches++;
      await sleep(2);
      return batches < SAFETY_NET ? 10 : 0;
    };
    const errors: unknown[] = [];
    const task = new PeriodicTask(
      (signal) => drainInBatches(fullBatch, 10, Number.POSITIVE_INFINITY, signal),
      (e) => errors.push(e),
    );
    task.start(5);
    while (batches < 5) await sleep(5);

    await task.stop();
    const atStop = batches;
    expect(atStop).toBeLessThan(SAFETY_NET); // stop() did not wait for the backlog to drain
    await sleep(50);
    expect(batches).toBe(atStop); // nothing ran after stop() resolved, and no new run started
    expect(errors).toEqual([]);

    task.start(5); // a stopped task can be started again
    while (batches < atStop + 3) await sleep(5);
    await task.stop();
  });

  it('refuses an interval Node would turn into 1 ms (past 2^31 - 1), instead of running without a pause', async () => {
    let runs = 0;
    const task = new PeriodicTask(
      () => Promise.resolve(runs++),
      () => undefined,
    );
    expect(() => task.start(30 * 86_400_000)).toThrow(
      'interval must be 1 to 2147483647 ms, got 2592000000',
    );
    expect(() => task.start(0)).toThrow('interval must be 1 to 2147483647 ms, got 0');
    await sleep(20);
    expect(runs).toBe(0);
    await task.stop();
  });

  it('drains until a short batch, or maxBatches, or an aborted signal', async () => {
    const counts = [10, 10, 3, 10];
    let next = 0;
    expect(await drainInBatches(() => Promise.resolve(counts[next++]), 10)).toEqual({
      removed: 23,
      batches: 3,
    });
    expect(await drainInBatches(() => Promise.resolve(10), 10, 4)).toEqual({
      removed: 40,
      batches: 4,
    });
    const aborted = new AbortController();
    aborted.abort();
    let calls = 0;
    const bounded = () => Promise.resolve(++calls < 100 ? 10 : 0); // a regression fails, it does not spin
    expect(await drainInBatches(bounded, 10, Number.POSITIVE_INFINITY, aborted.signal)).toEqual({
      removed: 0,
      batches: 0,
    });
  });

  it('refuses a batch size or a batch count that would never end the loop, before any batch', async () => {
    let batches = 0;
    const batch = () => Promise.resolve(++batches && 0);
    for (const size of [0, -1, 1.5, Number.NaN]) {
      await expect(drainInBatches(batch, size)).rejects.toThrow(
        /batchSize must be a positive integer/,
      );
    }
    for (const count of [0, -2, 2.5]) {
      await expect(drainInBatches(batch, 10, count)).rejects.toThrow(
        /maxBatches must be a positive integer/,
      );
    }
    expect(batches).toBe(0);
  });
});
