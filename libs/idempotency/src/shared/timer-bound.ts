/**
 * The longest delay Node's timers keep (about 24.8 days): a longer one fires after 1 ms, so an
 * interval past it would run its work without a pause. PostgreSQL's `lock_timeout` stops there
 * too. Options that set a timer are refused above it at start-up.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Refuses an option a timer (or `lock_timeout`) takes, counted in units of `unitMs`
 * milliseconds, past `MAX_TIMER_MS`; `owner` names the module in the message.
 */
export function assertTimerBound(owner: string, name: string, value: number, unitMs: number): void {
  const max = Math.floor(MAX_TIMER_MS / unitMs);
  if (value > max) {
    throw new Error(
      `${owner}: option ${name} must be at most ${max} (about 24.8 days, the longest timer ` +
        `Node.js keeps), got ${value}`,
    );
  }
}
