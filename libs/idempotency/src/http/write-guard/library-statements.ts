/**
 * Parameter arrays of the library's own statements sent through TypeORM. TypeORM hands a query's
 * array to the write guard's `beforeQuery` as it was given, so the guard tells the library's
 * bookkeeping (a phased lease, a step, a release between steps: each meant to commit on its own)
 * from the handler's writes without reading any text.
 */
const sentByLibrary = new WeakSet<unknown[]>();

/** A fresh array of `values`, known to the write guard as the library's. */
export function libraryParameters(values: readonly unknown[]): unknown[] {
  const parameters = [...values];
  sentByLibrary.add(parameters);
  return parameters;
}

export function isSentByLibrary(parameters: unknown): boolean {
  return Array.isArray(parameters) && sentByLibrary.has(parameters);
}
