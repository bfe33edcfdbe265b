import { atCheckPhase } from './delivered';
import type { Delivery } from './request-flow';

const checkPhase = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a subscriber saw, in order. */
function watch(decide: () => Delivery | Promise<Delivery>) {
  const seen: unknown[] = [];
  const subscription = atCheckPhase(decide).subscribe({
    next: (value) => seen.push(['next', value]),
    error: (error: unknown) => seen.push(['error', error]),
    complete: () => seen.push('complete'),
  });
  return { seen, subscription };
}

describe('atCheckPhase', () => {
  it('decides only when subscribed to', () => {
    const decide = jest.fn((): Delivery => ({ value: 'stored' }));
    const answer = atCheckPhase(decide);
    expect(decide).not.toHaveBeenCalled();
    answer.subscribe();
    expect(decide).toHaveBeenCalledTimes(1);
  });

  it('emits a delivery decided at once in the check phase of the turn, not when subscribed', async () => {
    const { seen } = watch(() => ({ value: 'stored' }));
    await Promise.resolve();
    expect(seen).toEqual([]);
    await checkPhase();
    expect(seen).toEqual([['next', 'stored'], 'complete']);
  });

  it('emits a promised delivery in the check phase of the turn that settled it', async () => {
    let settle!: (delivery: Delivery) => void;
    const { seen } = watch(() => new Promise<Delivery>((resolve) => (settle = resolve)));
    await checkPhase();
    expect(seen).toEqual([]);
    settle({ value: 'created' });
    await Promise.resolve();
    await Promise.resolve();
    // Settled, and its microtasks run: still held for the check phase.
    expect(seen).toEqual([]);
    await checkPhase();
    expect(seen).toEqual([['next', 'created'], 'complete']);
  });

  it('throws a delivered error to the subscriber, with no value before it', async () => {
    const rejection = new Error('key reused');
    const { seen } = watch(() => ({ error: rejection }));
    await checkPhase();
    expect(seen).toEqual([['error', rejection]]);
  });

  it('passes on an error thrown by the decision or its promise', async () => {
    const thrown = new Error('thrown');
    const synchronous = watch(() => {
      throw thrown;
    });
    expect(synchronous.seen).toEqual([['error', thrown]]);
    const rejected = new Error('rejected');
    const promised = watch(() => Promise.reject(rejected));
    await checkPhase();
    expect(promised.seen).toEqual([['error', rejected]]);
  });

  it('drops the pending emission once the subscriber has gone', async () => {
    let read = false;
    const delivery = {
      get value() {
        read = true;
        return 'stored';
      },
    };
    const { seen, subscription } = watch(() => delivery);
    subscription.unsubscribe();
    await checkPhase();
    await checkPhase();
    // Not even read: the check phase's callback was cleared, not merely ignored by rxjs.
    expect(read).toBe(false);
    expect(seen).toEqual([]);
  });

  it('schedules nothing for a subscriber gone while the delivery was promised', async () => {
    let settle!: (delivery: Delivery) => void;
    let read = false;
    const { seen, subscription } = watch(
      () => new Promise<Delivery>((resolve) => (settle = resolve)),
    );
    subscription.unsubscribe();
    settle({
      get value() {
        read = true;
        return 'created';
      },
    });
    await checkPhase();
    await checkPhase();
    expect(read).toBe(false);
    expect(seen).toEqual([]);
  });
});
