import { BadGatewayException } from '@nestjs/common';
import {
  QueryFailedError,
  QueryRunnerAlreadyReleasedError,
  QueryRunnerProviderAlreadyReleasedError,
} from 'typeorm';
import { isDatabaseUnavailable } from './postgres-errors';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a reset connection', withCode('ECONNRESET')],
    [
      'several addresses refused',
      Object.assign(new AggregateError([withCode('ECONNREFUSED')]), { code: 'ECONNREFUSED' }),
    ],
    ['a connection cut under a query', new Error('Connection terminated unexpectedly')],
    ['a pool that got no connection in time', new Error('timeout exceeded when trying to connect')],
    [
      'admin shutdown (57P01)',
      withCode('57P01', 'terminating connection due to administrator command'),
    ],
    ['the server starting up (57P03)', withCode('57P03', 'the database system is starting up')],
    ['too many connections (53300)', withCode('53300')],
    ['a connection exception (class 08)', withCode('08006')],
    [
      "PgBouncer's refusal (FATAL 08P01: server login failing)",
      Object.assign(
        withCode('08P01', 'server login has been failing, try again later (server_login_retry)'),
        { severity: 'FATAL' },
      ),
    ],
    [
      'TypeORM wrapping a PgBouncer refusal',
      new QueryFailedError(
        'START TRANSACTION',
        [],
        Object.assign(withCode('08P01', 'query_wait_timeout'), { severity: 'FATAL' }),
      ),
    ],
    ['TypeORM wrapping one', new QueryFailedError('INSERT', [], withCode('57P01'))],
    [
      "TypeORM's runner released after its connection failed",
      new QueryRunnerAlreadyReleasedError(),
    ],
    [
      "TypeORM's entity manager on a runner released after its connection failed",
      new QueryRunnerProviderAlreadyReleasedError(),
    ],
  ])('classifies %s as unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', new QueryFailedError('INSERT', [], withCode('23505'))],
    ['a lock timeout', withCode('55P03')],
    ['a serialization failure', withCode('40001')],
    ['a syntax error', withCode('42601')],
    [
      'a protocol violation (08P01: a bind with too few parameters)',
      new QueryFailedError('SELECT', [], withCode('08P01')),
    ],
    [
      'a protocol violation of severity ERROR (the session goes on)',
      Object.assign(withCode('08P01', 'bind message supplies 1 parameters'), { severity: 'ERROR' }),
    ],
    [
      'an HTTP client whose peer refused (fetch)',
      new TypeError('fetch failed', { cause: withCode('ECONNREFUSED') }),
    ],
    [
      "the app's 502 over a refused connection",
      new BadGatewayException('provider down', { cause: withCode('ECONNREFUSED') }),
    ],
    ['a plain bug', new TypeError('x is not a function')],
    ['not an error', 'ECONNREFUSED'],
    ['null', null],
  ])('does not classify %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('stops at a bounded depth on a cycle of wrapped errors', () => {
    const error: Error & { driverError?: unknown } = new Error('loop');
    error.driverError = error;
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
