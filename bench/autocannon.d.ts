/**
 * The part of autocannon 8's programmatic API the benchmark uses. autocannon ships no types, and
 * @types/autocannon describes version 7; this is checked against autocannon 8.0.0's README.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
    }

    interface Options {
      url: string;
      connections: number;
      pipelining: number;
      /** Seconds; without it, `amount` requests are sent. */
      duration?: number;
      /** Requests to send, instead of a duration. */
      amount?: number;
      /** Seconds before a request counts as a timeout (an error). */
      timeout?: number;
      requests: Request[];
    }

    interface Result {
      /** Seconds, as measured by autocannon. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
    }

    interface Instance extends EventEmitter {
      /** Every completed response; `responseTime` in milliseconds, with sub-ms precision. */
      on(
        event: 'response',
        listener: (
          client: unknown,
          statusCode: number,
          resBytes: number,
          responseTime: number,
        ) => void,
      ): this;
      on(event: 'done', listener: (result: Result) => void): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
      stop(): void;
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance;

  export = autocannon;
}
