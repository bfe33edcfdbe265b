import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import type { InboxSettlement } from 'nestjs-pg-idempotency/messaging';
import { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { describeWithBroker, TestBroker, uniqueQueue } from './support/broker';
import { LEDGER_CONSUMER, startLedgerApp } from './support/ledger-app';

/**
 * A delivery whose twin is still being processed waits `inbox.lockTimeoutMs` on the twin's
 * uncommitted claim, then gives up. That is no failure of the message: it must be retried
 * without counting an attempt, or a redelivery racing a slow handler could end on the
 * dead-letter queue while its twin applies it.
 */
describeWithBroker('inbox: a delivery that waits on its twin is retried, not counted', () => {
  let broker: TestBroker;
  let db: TestDatabase;
  let queue: string;
  let ledger: { app: INestApplication; settlements: InboxSettlement[] };

  beforeAll(async () => {
    broker = await TestBroker.connect();
    queue = await broker.queue(uniqueQueue('ledger-wait'));
    await broker.queue(`${queue}.dead`);
    ledger = await startLedgerApp(queue);
    db = new TestDatabase();
  });
  afterAll(async () => {
    await ledger?.app.close();
    await broker?.close();
    await db?.close();
  });

  it('retries a delivery whose claim timed out behind its twin, counts nothing, and applies it once the twin is gone', async () => {
    const messageId = randomUUID();
    const orderId = randomUUID();
    const settlementsOf = (status: InboxSettlement['status']) =>
      ledger.settlements.filter((s) => s.messageId === messageId && s.status === status);
    // The twin: a delivery of the same message whose transaction has not committed yet.
    const twin = await db.holdUncommitted(
      `INSERT INTO processed_messages (consumer, message_id) VALUES ($1, $2)`,
      [LEDGER_CONSUMER, messageId],
    );
    try {
      await broker.send(queue, { orderId }, { messageId });
      await eventually(
        'a retry after the claim timed out (5 s)',
        () => settlementsOf('retried')[0],
        20_000,
      );
    } finally {
      await twin.rollback();
    }
    await eventually('the message to be applied', () => settlementsOf('applied')[0], 20_000);

    expect(settlementsOf('retried')[0].attempts).toBeUndefined();
    expect(settlementsOf('dead-lettered')).toEqual([]);
    expect(
      await db.query(
        `SELECT attempts FROM inbox_failures WHERE consumer = $1 AND message_id = $2`,
        [LEDGER_CONSUMER, messageId],
      ),
    ).toEqual([]);
    expect(
      await db.query(`SELECT 1 FROM messaging_test_ledger WHERE message_id = $1`, [messageId]),
    ).toHaveLength(1);
  });
});
