import { Logger } from '@nestjs/common';

/**
 * Whether debug lines are logged at all. Checked before a per-request debug line is built: its
 * text (a key's hash among it) would otherwise cost every request, logged or not.
 */
export function debugEnabled(): boolean {
  return Logger.isLevelEnabled('debug');
}
