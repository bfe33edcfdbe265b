import {
  claimLeaseStatement,
  completeLeaseStatement,
  fencedUpdateApplied,
  leaseClaimFrom,
  recordStepStartStatement,
  recordStepStatement,
  releaseLeaseStatement,
  stepJson,
} from './lease.statements';

const hostileKey = `O'Brien \\ "quoted" $2 ; DROP TABLE idempotency_keys; -- ✓`;
const id = { tenantId: 'tenant', scope: 'POST /v1/payments', key: hostileKey };
const owner = '6f1c7d3e-0000-4000-8000-000000000000';
const response = {
  statusCode: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from('{}'),
};
const fenced = 'AND lease_owner = $4';

describe('lease statements', () => {
  it.each([
    ['claim', claimLeaseStatement(id, 'hash', 86_400, 30, owner, 1_000)],
    [
      'record step',
      recordStepStatement(
        id,
        owner,
        'charge',
        { text: stepJson({ ok: true }), sealedWith: null },
        30,
      ),
    ],
    ['record step start', recordStepStartStatement(id, owner, 'charge', 30)],
    ['complete', completeLeaseStatement(id, owner, response)],
    ['release', releaseLeaseStatement(id, owner)],
  ])(
    '%s: passes the key as a value, never in the text, and is never prepared',
    (_name, statement) => {
      expect(statement.text).not.toContain("O'Brien");
      expect(statement.values.slice(0, 3)).toEqual(['tenant', 'POST /v1/payments', hostileKey]);
      expect(statement.name).toBeUndefined();
    },
  );

  it('claims a new key, or takes over only a lapsed lease on the same request, with a bounded wait', () => {
    const statement = claimLeaseStatement(id, 'hash', 86_400, 30, owner, 1_000.5);
    expect(statement.text).toContain("WHERE k.status = 'in_progress' AND k.locked_until <= now()");
    expect(statement.text).toContain('AND k.request_hash = EXCLUDED.request_hash');
    expect(statement.text).toContain('expires_at = GREATEST(k.expires_at, EXCLUDED.expires_at)');
    expect(statement.values).toEqual([
      'tenant',
      'POST /v1/payments',
      hostileKey,
      'hash',
      86_400,
      30,
      owner,
      '1000ms',
    ]);
  });

  it('records a step as JSON text (undefined as null), fenced by the owner, and counts the rows it changed', () => {
    const plain = { text: stepJson({ b: 1, a: 2 }), sealedWith: null };
    const statement = recordStepStatement(id, owner, 'charge', plain, 30);
    expect(statement.text).toMatch(/^WITH changed AS \(UPDATE idempotency_keys/);
    expect(statement.text).toMatch(
      /RETURNING 1\) SELECT count\(\*\)::text AS updated FROM changed$/,
    );
    expect(statement.text).toContain(fenced);
    expect(statement.values).toEqual([
      'tenant',
      'POST /v1/payments',
      hostileKey,
      owner,
      'charge',
      '{"b":1,"a":2}',
      30,
      null,
    ]);
    expect(stepJson(undefined)).toBe('null');
  });

  it('completes and releases only a lease this attempt still owns', () => {
    const complete = completeLeaseStatement(id, owner, response);
    expect(complete.text).toContain(fenced);
    expect(complete.text).toContain('locked_until = NULL');
    expect(complete.values).toEqual([
      'tenant',
      'POST /v1/payments',
      hostileKey,
      owner,
      201,
      response.headers,
      response.body,
      null,
    ]);
    expect(releaseLeaseStatement(id, owner).text).toContain(fenced);
  });
});

describe('recordStepStartStatement', () => {
  it('appends the step to the started ones and renews the lease, fenced by the owner', () => {
    const statement = recordStepStartStatement(id, owner, 'charge', 30);
    // Once: the start is sent again before a call on an uncertain step, to renew the lease.
    expect(statement.text).toContain('ELSE array_append(started_steps, $5::text) END');
    expect(statement.text).toContain(
      'locked_until = clock_timestamp() + make_interval(secs => $6)',
    );
    expect(statement.text).toContain(fenced);
    expect(statement.text).toMatch(/SELECT count\(\*\)::text AS updated FROM changed$/);
    expect(statement.values).toEqual([
      'tenant',
      'POST /v1/payments',
      hostileKey,
      owner,
      'charge',
      30,
    ]);
  });
});

describe('leaseClaimFrom', () => {
  it('reads the recovery points committed so far, each result in the key order it was recorded in', () => {
    const claim = leaseClaimFrom([
      {
        recovery_point: 'charge',
        step_state: JSON.stringify({ reserve: '{"z":1,"a":2}', charge: 'null' }),
        started_steps: '["charge","refund"]',
        generation: '42',
      },
    ]);
    expect(claim).toEqual({
      claimed: true,
      recoveryPoint: 'charge',
      stepState: { reserve: { z: 1, a: 2 }, charge: null },
      startedSteps: ['charge', 'refund'],
      generation: '42',
    });
    expect(claim.claimed && Object.keys(claim.stepState.reserve as object)).toEqual(['z', 'a']);
  });

  it('reads a fresh claim with no recovery point', () => {
    expect(leaseClaimFrom([{ recovery_point: null, step_state: null, generation: '7' }])).toEqual({
      claimed: true,
      recoveryPoint: null,
      stepState: {},
      startedSteps: [],
      generation: '7',
    });
  });

  it('reads a JSON null for the steps as no step', () => {
    expect(
      leaseClaimFrom([
        { recovery_point: null, step_state: 'null', started_steps: null, generation: '8' },
      ]),
    ).toMatchObject({ claimed: true, stepState: {}, startedSteps: [] });
  });

  it('reads no row as a key someone else holds', () => {
    expect(leaseClaimFrom([])).toEqual({ claimed: false });
  });
});

describe('fencedUpdateApplied', () => {
  it('is true only when the one row was updated', () => {
    expect(fencedUpdateApplied([{ updated: '1' }])).toBe(true);
    expect(fencedUpdateApplied([{ updated: '0' }])).toBe(false);
    expect(fencedUpdateApplied([])).toBe(false);
  });
});
