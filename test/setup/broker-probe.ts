import { connect } from 'amqplib';

export const DEFAULT_TEST_AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

/** Whether a RabbitMQ answers at `url` (a real AMQP handshake, credentials included). */
export async function probeBroker(
  url: string,
  timeoutMs = 3000,
): Promise<{ up: true } | { up: false; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const connection = await Promise.race([
      connect(url),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    await connection.close();
    return { up: true };
  } catch (error) {
    return { up: false, reason: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** Hides the password of an AMQP URL for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
