/** The socket under a node-postgres client, as far as holding its writes back goes. */
export interface CorkableStream {
  cork(): void;
  uncork(): void;
  readonly destroyed?: boolean;
}

/**
 * Holds back the writes of the library's transactions until the event loop's check phase of
 * this turn, then lets every held connection write: the queries that a turn's requests send
 * leave in one burst instead of one by one between their JavaScript.
 *
 * Why: PostgreSQL's backends sleep between queries. Sent one by one, with the app's work for
 * the next request in between, each query may find the database's CPU idle and pay for waking
 * it, in the app's own system time; sent together, the first one wakes it and the rest find it
 * running. Measured on the benchmark's 2-core machine (docs/benchmark.md): the app's CPU per
 * create fell by about a tenth, the plain handler's in such a transaction by a quarter.
 *
 * What it costs: a query waits for the rest of the turn's callbacks, the same turn (no timer,
 * no extra turn): under load a few hundred microseconds, idle next to nothing. Results, errors
 * and order are node-postgres's own: only the moment the bytes are written moves.
 */
export class CoalescedWrites {
  private readonly held = new Set<CorkableStream>();
  private scheduled = false;
  private readonly release = (): void => {
    this.scheduled = false;
    const streams = [...this.held];
    this.held.clear();
    for (const stream of streams) {
      // A destroyed socket has nothing to write; its query fails through node-postgres.
      if (!stream.destroyed) stream.uncork();
    }
  };

  /** Holds `stream`'s writes until this turn's check phase; once per stream and turn. */
  hold(stream: CorkableStream | undefined): void {
    if (!stream || stream.destroyed || this.held.has(stream)) return;
    stream.cork();
    this.held.add(stream);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.release);
    }
  }
}
