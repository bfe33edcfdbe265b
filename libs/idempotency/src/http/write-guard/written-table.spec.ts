import { writtenTable } from './written-table';

describe('writtenTable', () => {
  it.each([
    ['INSERT INTO orders (id) VALUES ($1)', { write: 'insert', table: 'orders' }],
    ['insert into "Orders" select * from drafts', { write: 'insert', table: 'Orders' }],
    ['UPDATE public.orders SET total = 1', { write: 'update', table: 'orders', schema: 'public' }],
    [
      'update ONLY "billing"."ledger" set x = 1',
      { write: 'update', table: 'ledger', schema: 'billing' },
    ],
    ['DELETE FROM "say ""hi""" WHERE id = 1', { write: 'delete', table: 'say "hi"' }],
    ['delete from only Notes', { write: 'delete', table: 'notes' }],
    ['MERGE INTO accounts a USING moves m ON a.id = m.id', { write: 'merge', table: 'accounts' }],
    ['TRUNCATE TABLE audit', { write: 'truncate', table: 'audit' }],
    ['truncate audit, notes', { write: 'truncate', table: 'audit' }],
    ['  -- why\n/* who */ (INSERT INTO t VALUES (1))', { write: 'insert', table: 't' }],
    ['/* a\nmultiline note */\n\tUPDATE t SET a = 1', { write: 'update', table: 't' }],
    ['UPDATE s . t SET a = 1', { write: 'update', table: 't', schema: 's' }],
  ])('%s', (sql, expected) => {
    expect(writtenTable(sql)).toEqual(expected);
  });

  it.each([
    'SELECT * FROM orders',
    'select 1 -- INSERT INTO orders',
    '/* UPDATE orders */ SELECT 1',
    'WITH moved AS (DELETE FROM drafts RETURNING *) INSERT INTO orders SELECT * FROM moved',
    'CALL settle($1)',
    'START TRANSACTION',
    'COMMIT',
    'SAVEPOINT typeorm_1',
    "SELECT set_config('x', 'y', true)",
    'updated_at',
    'INSERT',
    '',
  ])('reads %j as no write it can name', (sql) => {
    expect(writtenTable(sql)).toBeUndefined();
  });
});
