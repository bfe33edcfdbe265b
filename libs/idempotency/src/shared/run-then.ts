/**
 * Runs `work` (an async function), then `after` however it ends, and passes its outcome on.
 * The same as `work().finally(after)` for a synchronous `after`, with one promise where
 * `finally` makes three: it wraps every idempotent request's transaction and handler.
 */
export function runThen<T>(work: () => Promise<T>, after: () => void): Promise<T> {
  return work().then(
    (value) => {
      after();
      return value;
    },
    (error: unknown) => {
      after();
      throw error;
    },
  );
}
