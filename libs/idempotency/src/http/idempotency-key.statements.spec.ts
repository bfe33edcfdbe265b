import { escapeLiteral } from 'pg';
import { QueryFailedError } from 'typeorm';
import {
  claimFailure,
  claimResultFrom,
  claimStatement,
  deleteExpiredStatement,
  existingKeyFrom,
  purgeExpiredStatement,
  readStatement,
  recordFailure,
  recordStatement,
  ROLLBACK_TO_SAVEPOINT,
  SAVEPOINT,
  SAVEPOINT_STATEMENTS,
} from './idempotency-key.statements';
import { boundLockTimeout, RESTORE_LOCK_TIMEOUT } from '../shared/lock-timeout';
import { ClaimConflictError } from '../shared/postgres-errors';
import { inlineParameters, type SqlStatement } from '../shared/sql-literals';

const hostileKey = `O'Brien \\ "quoted" $2 ; DROP TABLE idempotency_keys; -- ✓`;
const id = { tenantId: "tenant'1", scope: 'POST /v1/orders', key: hostileKey };
const response = {
  statusCode: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from('{"id":1}'),
};
const withCode = (code: string) => Object.assign(new Error(code), { code });

/** The highest `$n` in a text: every value must have one, and every placeholder a value. */
const highestPlaceholder = (text: string) =>
  Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((match) => Number(match[1])));

const keyStatements: [string, SqlStatement][] = [
  ['claim', claimStatement(id, 'hash', 86_400, 1_000)],
  ['read', readStatement(id)],
  ['delete-expired', deleteExpiredStatement(id, 1_000)],
  ['record', recordStatement(id, response)],
];

describe('key statements', () => {
  it.each(keyStatements)('%s: passes the key as a value, never in the text', (_name, statement) => {
    expect(statement.text).not.toContain(hostileKey);
    expect(statement.text).not.toContain("O'Brien");
    expect(statement.values.slice(0, 3)).toEqual(["tenant'1", 'POST /v1/orders', hostileKey]);
    expect(statement.text).toContain('tenant_id = $1 AND endpoint = $2 AND idem_key = $3');
  });

  it.each([...keyStatements, ['purge', purgeExpiredStatement(500)] as [string, SqlStatement]])(
    '%s: has a value for every placeholder and a placeholder for every value',
    (_name, statement) => {
      expect(highestPlaceholder(statement.text)).toBe(statement.values.length);
    },
  );

  it('keeps the text of a statement the same for every key, so it can be prepared once', () => {
    const other = { tenantId: 't', scope: 's', key: 'plain' };
    expect(claimStatement(other, 'h', 1, 1).text).toBe(
      claimStatement(id, 'hash', 86_400, 1_000).text,
    );
    expect(recordStatement(other, response).text).toBe(recordStatement(id, response).text);
  });

  it('inlines a hostile key as one quoted literal when the claim rides along with START TRANSACTION', () => {
    const inlined = inlineParameters(claimStatement(id, 'hash', 86_400, 1_000), escapeLiteral);
    expect(inlined).toContain(`idem_key = ${escapeLiteral(hostileKey)} AND NOT EXISTS`);
    expect(inlined).toContain(
      `SELECT 'tenant''1', 'POST /v1/orders', ${escapeLiteral(hostileKey)}, 'hash', 'in_progress'`,
    );
  });
});

describe('claimStatement', () => {
  it('claims in one named statement whose lock timeout is whole milliseconds, set for this transaction', () => {
    const statement = claimStatement(id, 'hash', 86_400, 1_500.9);
    expect(statement.name).toBe('claim');
    expect(statement.text).toMatch(/^WITH claim AS \(\s+INSERT INTO idempotency_keys/);
    expect(statement.text).toContain(`FROM (SELECT ${boundLockTimeout('$6')}) AS bounded_wait`);
    expect(statement.text).toContain('ON CONFLICT (tenant_id, endpoint, idem_key) DO NOTHING');
    expect(statement.values).toEqual([
      "tenant'1",
      'POST /v1/orders',
      hostileKey,
      'hash',
      86_400,
      '1500ms',
    ]);
  });
});

describe('claimResultFrom', () => {
  // The row that beat the claim, as the JSON text the statement returns: the body in hex.
  const completed = {
    status: 'completed',
    requestHash: 'hash',
    responseCode: 201,
    responseHeaders: { 'content-type': 'application/json' },
    responseBody: Buffer.from('{"id":1}').toString('hex'),
    sealedWith: null,
    expired: false,
    expiresInMs: 86_399_000,
    leaseSecondsLeft: null,
  };
  const completedRow = { generation: null, existing: JSON.stringify(completed) };

  it('reads a claim with its generation', () => {
    expect(claimResultFrom([{ generation: '1764662400000000', existing: null }])).toEqual({
      claimed: true,
      generation: '1764662400000000',
    });
  });

  it('reads the completed row that beat the claim, with its response and time to live', () => {
    expect(claimResultFrom([completedRow])).toEqual({
      claimed: false,
      existing: {
        status: 'completed',
        requestHash: 'hash',
        expired: false,
        expiresInMs: 86_399_000,
        leaseSecondsLeft: undefined,
        response,
      },
    });
  });

  it('reads a row in progress without a response, with the lease it has left', () => {
    const inProgress = {
      generation: null,
      existing: JSON.stringify({
        ...completed,
        status: 'in_progress',
        responseCode: null,
        responseBody: null,
        leaseSecondsLeft: 7,
      }),
    };
    expect(claimResultFrom([inProgress])).toMatchObject({
      claimed: false,
      existing: { status: 'in_progress', leaseSecondsLeft: 7, response: undefined },
    });
  });

  it('reads no row as a twin that committed after the snapshot: nothing to resolve yet', () => {
    expect(claimResultFrom([])).toEqual({ claimed: false });
  });
});

describe('claimFailure', () => {
  it('turns a lock timeout into a 409 conflict that says it waited', () => {
    const failure = claimFailure(new QueryFailedError('WITH claim', [], withCode('55P03')));
    expect(failure).toBeInstanceOf(ClaimConflictError);
    expect((failure as ClaimConflictError).lockTimeout).toBe(true);
  });

  it('turns the app’s statement_timeout ending the same wait into a 409 conflict that waited', () => {
    expect(claimFailure(withCode('57014'))).toMatchObject({ lockTimeout: true });
  });

  it('turns a serialization failure into a 409 conflict that did not wait out the timeout', () => {
    expect(claimFailure(withCode('40001'))).toMatchObject({ lockTimeout: false });
  });

  it('passes any other error through unchanged', () => {
    const error = withCode('23505');
    expect(claimFailure(error)).toBe(error);
  });
});

describe('readStatement and existingKeyFrom', () => {
  it('reads the row with a fresh snapshot and nothing else', () => {
    const statement = readStatement(id);
    expect(statement.text).toMatch(/^SELECT json_build_object\(\s+'status', status, /);
    expect(statement.values).toEqual(["tenant'1", 'POST /v1/orders', hostileKey]);
    expect(statement.name).toBeUndefined();
  });

  it('reads a vanished row as undefined', () => {
    expect(existingKeyFrom([])).toBeUndefined();
  });
});

describe('deleteExpiredStatement', () => {
  it('deletes the key only when it is completed and past its time to live, its wait bounded', () => {
    const statement = deleteExpiredStatement(id, 1_500);
    expect(statement.text.replace(/\s+/g, ' ')).toBe(
      "DELETE FROM idempotency_keys WHERE tenant_id = $1 AND endpoint = $2 AND idem_key = $3 AND expires_at <= now() AND status = 'completed' " +
        `AND (SELECT ${boundLockTimeout('$4')}) IS NOT NULL`,
    );
    expect(statement.values[3]).toBe('1500ms');
  });
});

describe('recordStatement and recordFailure', () => {
  it('records the response on the claimed row only, and fails (division by zero) when that row is gone', () => {
    const statement = recordStatement(id, response);
    expect(statement.name).toBe('record');
    expect(statement.text).toMatch(/^WITH recorded AS \(\s+UPDATE idempotency_keys/);
    expect(statement.text).toContain("AND status = 'in_progress'");
    expect(statement.text).toContain('SELECT 1 / count(*) AS recorded FROM recorded');
    expect(statement.values).toEqual([
      "tenant'1",
      'POST /v1/orders',
      hostileKey,
      201,
      response.headers,
      response.body,
      null,
    ]);
  });

  it('records a sealed response with its headers inside the envelope and the key id beside it', () => {
    const envelope = Buffer.from('sealed bytes');
    const statement = recordStatement(id, { statusCode: 201, sealedWith: 'k2', envelope });
    expect(statement.text).toContain('sealed_with = $7');
    expect(statement.values.slice(3)).toEqual([201, null, envelope, 'k2']);
  });

  it('reads a row with a key id as a sealed response, one without as a plain one', () => {
    const existing = {
      status: 'completed',
      requestHash: 'h',
      responseCode: 201,
      responseHeaders: null,
      responseBody: Buffer.from('env').toString('hex'),
      expired: false,
      expiresInMs: 5,
      leaseSecondsLeft: null,
    };
    expect(
      existingKeyFrom([{ existing: JSON.stringify({ ...existing, sealedWith: 'k1' }) }])?.response,
    ).toEqual({
      statusCode: 201,
      sealedWith: 'k1',
      envelope: Buffer.from('env'),
    });
    expect(
      existingKeyFrom([{ existing: JSON.stringify({ ...existing, sealedWith: null }) }])?.response,
    ).toEqual({
      statusCode: 201,
      headers: {},
      body: Buffer.from('env'),
    });
  });

  it('says a division by zero plainly: the claim vanished', () => {
    expect(recordFailure(withCode('22012'))).toEqual(
      new Error('idempotency key vanished before its response was recorded'),
    );
    const other = withCode('57014');
    expect(recordFailure(other)).toBe(other);
  });
});

describe('savepoint statements', () => {
  it('gives the handler its lock_timeout back and marks the savepoint, in one text without values', () => {
    expect(SAVEPOINT_STATEMENTS.map((statement) => statement.text)).toEqual([
      RESTORE_LOCK_TIMEOUT,
      'SAVEPOINT idempotency_handler',
    ]);
    expect(SAVEPOINT).toEqual({
      text: `${RESTORE_LOCK_TIMEOUT}; SAVEPOINT idempotency_handler`,
      values: [],
    });
    expect(ROLLBACK_TO_SAVEPOINT).toEqual({
      text: 'ROLLBACK TO SAVEPOINT idempotency_handler',
      values: [],
    });
  });
});

describe('purgeExpiredStatement', () => {
  it('deletes one bounded batch, skipping locked rows and live leases', () => {
    const statement = purgeExpiredStatement(500);
    expect(statement.values).toEqual([500]);
    expect(statement.text).toContain('LIMIT $1');
    expect(statement.text).toContain('FOR UPDATE SKIP LOCKED');
    expect(statement.text).toContain(
      "(status = 'completed' OR locked_until IS NULL OR locked_until <= now())",
    );
    expect(statement.text).toMatch(/SELECT count\(\*\)::text AS removed FROM deleted$/);
  });
});
