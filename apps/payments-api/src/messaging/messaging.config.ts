/** Names other systems rely on: they publish to and read these queues by name. */
export const PAYMENTS_EXCHANGE = 'payments';
export const ORDER_PAYMENTS_QUEUE = 'order-payments';
/** The logical consumer recorded in `processed_messages`; stays the same if the queue is renamed. */
export const ORDER_PAYMENTS_CONSUMER = 'order-payments';
/** The Nest event pattern every message of the queue is mapped to (see FixedPatternDeserializer). */
export const ORDER_PAYMENTS_PATTERN = 'order-payments';

export const deadLetterQueueOf = (queue: string): string => `${queue}.dead`;

/** The messaging part of the demo, on only when `AMQP_URL` is set. */
export interface MessagingSettings {
  amqpUrl: string;
  /** `ORDER_PAYMENTS_QUEUE`: the consumer's queue; its dead letters go to `<queue>.dead`. */
  orderPaymentsQueue: string;
  /** `AMQP_PREFETCH`: unacknowledged messages this process may hold at once. */
  prefetchCount: number;
  /** `INBOX_MAX_ATTEMPTS`: failed deliveries before a message is dead-lettered. */
  maxAttempts: number;
  /** `OUTBOX_RELAY=0` (or `off`) turns this process's relay off (another process relays). */
  relay: boolean;
  /** `OUTBOX_POLL_MS`: how often the relay looks for pending events. */
  relayPollMs: number;
}

export function messagingSettings(
  amqpUrl: string,
  overrides: Partial<MessagingSettings> = {},
): MessagingSettings {
  return {
    amqpUrl,
    orderPaymentsQueue: ORDER_PAYMENTS_QUEUE,
    prefetchCount: 10,
    maxAttempts: 5,
    relay: true,
    relayPollMs: 500,
    ...overrides,
  };
}

/** Reads the optional tuning variables; unset ones keep their defaults. */
export function messagingOverridesFromEnv(env: NodeJS.ProcessEnv): Partial<MessagingSettings> {
  const overrides: Partial<MessagingSettings> = {};
  if (env.ORDER_PAYMENTS_QUEUE) overrides.orderPaymentsQueue = env.ORDER_PAYMENTS_QUEUE;
  if (env.AMQP_PREFETCH)
    overrides.prefetchCount = positiveInteger('AMQP_PREFETCH', env.AMQP_PREFETCH);
  if (env.INBOX_MAX_ATTEMPTS)
    overrides.maxAttempts = positiveInteger('INBOX_MAX_ATTEMPTS', env.INBOX_MAX_ATTEMPTS);
  if (env.OUTBOX_RELAY) overrides.relay = relayOn(env.OUTBOX_RELAY);
  if (env.OUTBOX_POLL_MS)
    overrides.relayPollMs = positiveInteger('OUTBOX_POLL_MS', env.OUTBOX_POLL_MS);
  return overrides;
}

/** `0` or `off` turns the relay off, `1` or `on` keeps it; anything else stops the start. */
function relayOn(value: string): boolean {
  if (value === '1' || value === 'on') return true;
  if (value === '0' || value === 'off') return false;
  throw new Error(`OUTBOX_RELAY must be "on" or "off" (or 1 or 0), got "${value}"`);
}

function positiveInteger(name: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0)
    throw new Error(`${name} must be a positive integer, got "${value}"`);
  return parsed;
}
