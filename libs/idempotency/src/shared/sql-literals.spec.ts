import { Client } from 'pg';
import { executeStatement, inlineParameters } from './sql-literals';

/** node-postgres's own escaping, as the library gets it from a connection. */
const driverEscape = (value: string) => Client.prototype.escapeLiteral(value);

describe('inlined literals', () => {
  const samples = [
    'acme',
    'POST /v1/orders',
    'k-0b7b6c1e',
    '',
    '{"location":"/v1/orders/1"}',
    "O'Brien",
    "''; DROP TABLE idempotency_keys; --",
    'C:\\temp',
    "both ' and \\",
    'ünïcödé ✓',
  ];

  it.each(samples)('writes %j exactly as the driver escapes it', (value) => {
    expect(inlineParameters({ text: 'SELECT $1', values: [value] }, driverEscape)).toBe(
      `SELECT ${driverEscape(value)}`,
    );
  });

  it('leaves the driver out only where it would change nothing', () => {
    const asked: string[] = [];
    const escape = (value: string) => {
      asked.push(value);
      return driverEscape(value);
    };
    executeStatement('claim', ['plain', "it's", { path: 'C:\\x' }, { plain: true }], escape);
    expect(asked).toEqual(["it's", '{"path":"C:\\\\x"}']);
  });
});
