import { AppProcess } from '../../support/app-process';
import { ACME, postRaw, uniqueCustomer, uniqueKey } from '../../support/http';
import { databaseUrl } from '../../support/test-app';
import { brokerUrl } from './broker';

export interface MessagingAppOptions {
  /** The order-payments queue of this app; a unique one per suite keeps suites apart. */
  queue: string;
  /** Run the outbox relay in this process. Default false: only the outbox suite relays. */
  relay?: boolean;
  prefetch?: number;
  maxAttempts?: number;
}

/** The demo with messaging on, as a real process on the run's database and broker. */
export function startMessagingApp(options: MessagingAppOptions): Promise<AppProcess> {
  return AppProcess.start({
    DATABASE_URL: databaseUrl(),
    AMQP_URL: brokerUrl(),
    ORDER_PAYMENTS_QUEUE: options.queue,
    // Only the outbox suite relays: a relay elsewhere could take the events it faults on.
    OUTBOX_RELAY: options.relay ? '1' : '0',
    OUTBOX_POLL_MS: '100',
    AMQP_PREFETCH: String(options.prefetch ?? 10),
    INBOX_MAX_ATTEMPTS: String(options.maxAttempts ?? 3),
  });
}

/** Creates an order through the API and returns its id. */
export async function createOrder(
  baseUrl: string,
  amountCents = 10_000,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await postRaw(
    baseUrl,
    '/v1/orders',
    JSON.stringify({ customerId: uniqueCustomer(), amountCents }),
    {
      authorization: ACME.authorization,
      'idempotency-key': uniqueKey(),
      ...headers,
    },
  );
  if (response.status !== 201)
    throw new Error(`order not created: ${response.status} ${response.text}`);
  return JSON.parse(response.text).id as string;
}

/** The order as `GET /v1/orders/:id` shows it. */
export async function getOrder(
  baseUrl: string,
  id: string,
): Promise<{ id: string; paidCents: number }> {
  const response = await fetch(`${baseUrl}/v1/orders/${id}`, {
    headers: { authorization: ACME.authorization },
  });
  if (response.status !== 200) throw new Error(`GET order ${id}: ${response.status}`);
  return (await response.json()) as { id: string; paidCents: number };
}
