import { idledTooLong, REWARM_AFTER_IDLE_MS } from './run-scenario';

describe('re-warming a demo process after an idle spell', () => {
  const now = 1_000_000;

  it('re-warms a process that never served load, or that idled for the threshold or longer', () => {
    expect(idledTooLong(undefined, now)).toBe(true);
    expect(idledTooLong(now - REWARM_AFTER_IDLE_MS, now)).toBe(true);
    expect(idledTooLong(now - 120_000, now)).toBe(true);
  });

  it('leaves a process that served load within the threshold as it is', () => {
    expect(idledTooLong(now - REWARM_AFTER_IDLE_MS + 1, now)).toBe(false);
    expect(idledTooLong(now - 1_000, now)).toBe(false);
  });
});
