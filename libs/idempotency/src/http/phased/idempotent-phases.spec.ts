import { LeasedPhases } from './idempotent-phases';
import type { LeaseStore } from './lease.store';

/** Phases of a first attempt whose lease statements all apply, recording the steps they get. */
function firstAttempt(stepState: Record<string, unknown> = {}) {
  const recorded: string[] = [];
  const leases = {
    recordStepStart: () => Promise.resolve(true),
    recordStep: (_id: unknown, _owner: string, step: string) => {
      recorded.push(step);
      return Promise.resolve(true);
    },
  } as unknown as LeaseStore;
  const phases = new LeasedPhases({
    id: { tenantId: 't', scope: 'POST /charges', key: 'k' },
    owner: 'attempt',
    leaseSeconds: 60,
    generation: '1',
    recoveryPoint: null,
    stepState,
    startedSteps: [],
    leases,
    events: { emit: () => undefined } as never,
    txHost: {
      isTransactionActive: () => false,
      withTransaction: (work: () => Promise<unknown>) => work(),
    } as never,
  });
  return { phases, recorded };
}

describe('LeasedPhases', () => {
  it.each(['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__'])(
    'runs and records a step named %s, as any other name',
    async (name) => {
      for (const kind of ['external', 'transaction'] as const) {
        const { phases, recorded } = firstAttempt();
        let ran = 0;
        const result = await phases[kind](name, () => {
          ran++;
          return Promise.resolve({ charged: true });
        });
        expect({ ran, recorded, result }).toEqual({
          ran: 1,
          recorded: [name],
          result: { charged: true },
        });
        // And returns what it recorded when the same attempt names it again.
        expect(await phases[kind](name, () => Promise.reject(new Error('ran twice')))).toEqual({
          charged: true,
        });
      }
    },
  );

  it('returns a recorded step of such a name from the row, without running it', async () => {
    const { phases } = firstAttempt(JSON.parse('{"__proto__": {"charged": "earlier"}}'));
    expect(
      await phases.external('__proto__', () => Promise.reject(new Error('ran again'))),
    ).toEqual({ charged: 'earlier' });
  });

  it('holds the lease after a failure for the longest inFlightSeconds of the calls it left uncertain', async () => {
    const { phases } = firstAttempt();
    await phases.external('recorded', () => Promise.resolve(1), { inFlightSeconds: 30 });
    expect(phases.leaseHoldSeconds).toBe(0);
    const failing = (name: string, inFlightSeconds?: number) =>
      phases
        .external(name, () => Promise.reject(new Error('timed out')), { inFlightSeconds })
        .catch(() => undefined);
    await Promise.all([failing('first', 5), failing('second', 12), failing('third')]);
    expect(phases.leaseHoldSeconds).toBe(12);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses inFlightSeconds %s before the step starts',
    async (inFlightSeconds) => {
      const { phases, recorded } = firstAttempt();
      await expect(
        phases.external('charge', () => Promise.resolve(1), { inFlightSeconds }),
      ).rejects.toThrow(/inFlightSeconds must be/);
      expect(recorded).toEqual([]);
    },
  );
});
