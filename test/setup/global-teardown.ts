import { rmSync } from 'node:fs';
import { TEST_STATE } from './test-state';

export default async function globalTeardown(): Promise<void> {
  const embedded = TEST_STATE.embedded;
  if (!embedded) return;
  await embedded.handle.stop();
  rmSync(embedded.dataDir, { recursive: true, force: true });
}
