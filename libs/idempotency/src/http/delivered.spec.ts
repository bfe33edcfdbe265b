import { atCheckPhase } from './delivered';

const checkPhase = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('atCheckPhase', () => {
  it('emits the value in the check phase of the turn, not when subscribed', async () => {
    const seen: string[] = [];
    atCheckPhase({ value: 'stored' }).subscribe({
      next: (value) => seen.push(`next ${String(value)}`),
      complete: () => seen.push('complete'),
    });
    await Promise.resolve();
    expect(seen).toEqual([]);
    await checkPhase();
    expect(seen).toEqual(['next stored', 'complete']);
  });

  it('throws a delivered error to the subscriber, with no value before it', async () => {
    const rejection = new Error('key reused');
    const seen: unknown[] = [];
    atCheckPhase({ error: rejection }).subscribe({
      next: (value) => seen.push(value),
      error: (error: unknown) => seen.push(error),
    });
    await checkPhase();
    expect(seen).toEqual([rejection]);
  });

  it('drops the pending emission once the subscriber has gone', async () => {
    let read = false;
    const delivery = {
      get value() {
        read = true;
        return 'stored';
      },
    };
    const seen: unknown[] = [];
    const subscription = atCheckPhase(delivery).subscribe({
      next: (value) => seen.push(value),
      complete: () => seen.push('complete'),
    });
    subscription.unsubscribe();
    await checkPhase();
    await checkPhase();
    // Not even read: the check phase's callback was cleared, not merely ignored by rxjs.
    expect(read).toBe(false);
    expect(seen).toEqual([]);
  });
});
