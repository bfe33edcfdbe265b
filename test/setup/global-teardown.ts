import { rmSync } from 'node:fs';
import { TEST_STATE } from './test-state';

export default async function globalTeardown(): Promise<void> {
  const broker = process.env.TEST_BROKER_STATUS;
  if (broker && broker !== 'up') {
    // Said again here, beside the summary, where a reader looks for why suites were skipped.
    console.warn(
      `\nRabbitMQ suites SKIPPED: ${broker}. Set REQUIRE_BROKER=1 to make that a failure.`,
    );
  }
  const embedded = TEST_STATE.embedded;
  if (!embedded) return;
  await embedded.handle.stop();
  rmSync(embedded.dataDir, { recursive: true, force: true });
  // Elsewhere when the checkout is out of the postgres user's reach (running as root).
  rmSync(embedded.handle.dataDir, { recursive: true, force: true });
}
