import type { AppProcess } from '../support/app-process';
import { TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { describeWithBroker, TestBroker, uniqueQueue } from './support/broker';
import { createOrder, getOrder, startMessagingApp } from './support/messaging-app';

const MESSAGES = 1000;
const DUPLICATES = 300; // 30%: copies of earlier messages, same id and body
const ORDERS = 20;
const PREFETCH = 10;

/** A fixed-seed generator: the run is the same every time, and a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

describeWithBroker('two consumer processes, prefetch above 1, duplicates in the stream', () => {
  let broker: TestBroker;
  let apps: AppProcess[];
  let db: TestDatabase;
  let queue: string;

  beforeAll(async () => {
    broker = await TestBroker.connect();
    queue = await broker.queue(uniqueQueue('order-payments'));
    await broker.queue(`${queue}.dead`);
    db = new TestDatabase();
    apps = await Promise.all([
      startMessagingApp({ queue, prefetch: PREFETCH }),
      startMessagingApp({ queue, prefetch: PREFETCH }),
    ]);
  });
  afterAll(async () => {
    await Promise.all((apps ?? []).map((app) => app.stop()));
    await broker?.close();
    await db?.close();
  });

  it(`applies ${MESSAGES} messages with ${DUPLICATES} duplicates exactly once: the sum of paidCents is exact`, async () => {
    const orderIds = await Promise.all(
      Array.from({ length: ORDERS }, (_, i) => createOrder(apps[i % 2].url)),
    );
    const runId = orderIds[0].slice(0, 8);
    const next = random(42);
    const unique = Array.from({ length: MESSAGES - DUPLICATES }, (_, i) => ({
      messageId: `bulk-${runId}-${i}`,
      orderId: orderIds[Math.floor(next() * ORDERS)],
      amountCents: 1 + Math.floor(next() * 5000),
    }));
    const stream = [
      ...unique,
      ...Array.from({ length: DUPLICATES }, () => unique[Math.floor(next() * unique.length)]),
    ];
    for (let i = stream.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [stream[i], stream[j]] = [stream[j], stream[i]];
    }
    const expected = new Map<string, number>(orderIds.map((id) => [id, 0]));
    for (const m of unique) expected.set(m.orderId, (expected.get(m.orderId) ?? 0) + m.amountCents);
    const expectedSum = unique.reduce((sum, m) => sum + m.amountCents, 0);

    expect((await broker.stats(queue)).consumerCount).toBe(2);
    await broker.sendAll(
      queue,
      stream.map((m) => ({
        body: { orderId: m.orderId, amountCents: m.amountCents },
        options: { messageId: m.messageId },
      })),
    );

    // Done when every delivery is settled: 700 applied (claims) and 300 skipped (logged).
    const skippedBy = (app: AppProcess) =>
      (app.logs.join('').match(new RegExp(`bulk-${runId}-\\d+ already processed`, 'g')) ?? [])
        .length;
    const processed = async () =>
      Number(
        (
          await db.query<{ n: string }>(
            `SELECT count(*) AS n FROM processed_messages WHERE message_id LIKE $1`,
            [`bulk-${runId}-%`],
          )
        )[0].n,
      );
    await eventually(
      'every delivery to be settled',
      async () =>
        (await processed()) === unique.length &&
        skippedBy(apps[0]) + skippedBy(apps[1]) === DUPLICATES
          ? true
          : undefined,
      60_000,
    );

    const rows = await db.query<{ id: string; paid_cents: string }>(
      `SELECT id, paid_cents FROM orders WHERE id = ANY($1)`,
      [orderIds],
    );
    const sum = rows.reduce((total, row) => total + Number(row.paid_cents), 0);
    console.log(
      `two consumers: ${MESSAGES} messages (${unique.length} unique, ${DUPLICATES} duplicates), ` +
        `${await processed()} applied, ${skippedBy(apps[0])} + ${skippedBy(apps[1])} duplicates skipped, ` +
        `sum of paidCents ${sum} (expected ${expectedSum})`,
    );
    expect(sum).toBe(expectedSum);
    for (const row of rows) expect(Number(row.paid_cents)).toBe(expected.get(row.id));
    expect(await processed()).toBe(MESSAGES - DUPLICATES);
    // Both processes took part, and the API shows what the database holds.
    expect(skippedBy(apps[0])).toBeGreaterThan(0);
    expect(skippedBy(apps[1])).toBeGreaterThan(0);
    expect((await getOrder(apps[1].url, orderIds[0])).paidCents).toBe(expected.get(orderIds[0]));
    expect(await broker.stats(queue)).toMatchObject({ messageCount: 0 });
    expect(await broker.stats(`${queue}.dead`)).toMatchObject({ messageCount: 0 });
  });
});
