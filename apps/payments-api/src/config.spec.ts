import { configFromEnv } from './config';

const configOf = (env: NodeJS.ProcessEnv) =>
  configFromEnv(env, 'postgres://localhost/demo', 'http://localhost:3001');

describe("the demo's switches", () => {
  it('turns the scheduled cleanup off with IDEMPOTENCY_CLEANUP=off, and keeps it otherwise', () => {
    expect(configOf({ IDEMPOTENCY_CLEANUP: 'off' }).cleanup).toBe(false);
    for (const env of [{}, { IDEMPOTENCY_CLEANUP: 'on' }]) {
      expect(configOf(env).cleanup).toEqual({ intervalSeconds: 300, batchSize: 1000 });
    }
  });

  it('turns the outbox relay off with OUTBOX_RELAY=0 or off, and keeps it with 1 or on', () => {
    for (const value of ['0', 'off']) {
      expect(configOf({ OUTBOX_RELAY: value }).messaging?.relay).toBe(false);
    }
    for (const value of ['1', 'on']) {
      expect(configOf({ OUTBOX_RELAY: value }).messaging?.relay).toBe(true);
    }
    expect(configOf({}).messaging?.relay).toBeUndefined(); // the default: on
  });

  it.each([
    ['IDEMPOTENCY_CLEANUP', 'no'],
    ['OUTBOX_RELAY', 'no'],
    ['OUTBOX_RELAY', 'false'],
  ])('stops the start on %s=%s instead of reading it as on', (name, value) => {
    expect(() => configOf({ [name]: value })).toThrow(name);
  });
});
