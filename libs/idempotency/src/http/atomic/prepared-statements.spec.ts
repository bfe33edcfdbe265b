import { PreparedStatements } from './prepared-statements';

const escape = (value: string) => `'${value.replace(/'/g, "''")}'`;
const claim = { name: 'claim', text: 'SELECT $1::text', values: ['k'] };

describe('PreparedStatements', () => {
  it('prepares a named statement once per connection, then executes it', () => {
    const prepared = new PreparedStatements();
    const connection = {};
    expect(prepared.render(connection, claim, escape)).toMatch(
      /^PREPARE idempotency_claim_[0-9a-f]{8} AS SELECT \$1::text;\nEXECUTE/,
    );
    prepared.settle(connection, true);
    expect(prepared.render(connection, claim, escape)).toMatch(
      /^EXECUTE idempotency_claim_[0-9a-f]{8}\('k'\)$/,
    );
  });

  it('prepares again on a connection whose statements vanished', () => {
    const prepared = new PreparedStatements();
    const connection = {};
    prepared.render(connection, claim, escape);
    prepared.settle(connection, true);
    expect(prepared.forget(connection)).toBe(false);
    expect(prepared.render(connection, claim, escape)).toMatch(/^PREPARE /);
  });

  it('sends statements whole once one connection lost them a third time (one busy connection behind a pooler)', () => {
    const prepared = new PreparedStatements();
    const connection = {};
    const losses = [1, 2, 3].map(() => {
      prepared.render(connection, claim, escape);
      prepared.settle(connection, true);
      return prepared.forget(connection);
    });
    expect(losses).toEqual([false, false, true]);
    expect(prepared.render(connection, claim, escape)).toBe("SELECT 'k'::text");
  });

  it('sends statements whole once a third connection lost them: the sessions change under the pool', () => {
    const prepared = new PreparedStatements();
    const losses = [{}, {}, {}].map((connection) => {
      prepared.render(connection, claim, escape);
      prepared.settle(connection, true);
      return prepared.forget(connection);
    });
    expect(losses).toEqual([false, false, true]);
    expect(prepared.enabled).toBe(false);
    const connection = {};
    expect(prepared.render(connection, claim, escape)).toBe("SELECT 'k'::text");
    expect(prepared.forget(connection)).toBe(false); // said once
  });
});
