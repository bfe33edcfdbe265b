import type { IncomingMessage, Server, ServerResponse } from 'http';
import type { INestApplication, Logger } from '@nestjs/common';

/** How long the requests in flight get to finish once a stop was asked for. */
export const DRAIN_TIMEOUT_MS = 10_000;

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Stops the demo in order on SIGINT (Ctrl-C), SIGTERM or SIGHUP: what was opened last closes
 * first, so the HTTP servers drain before the pools close, and the pools close before
 * PostgreSQL stops. Then the process exits 0.
 *
 * Not Nest's enableShutdownHooks(): it destroys the modules (the DataSource among them) before
 * it closes the HTTP server, so requests in flight lose their database, and it ends the process
 * by raising the signal again, an exit code of 130 or 143.
 */
export class GracefulShutdown {
  private readonly closers: { what: string; close: () => Promise<void> }[] = [];
  private stopping = false;

  constructor(private readonly logger: Logger) {
    for (const signal of SIGNALS) process.on(signal, () => this.stop(signal));
  }

  /** Registers what to close; closed in the reverse order of registration. */
  onStop(what: string, close: () => Promise<void>): void {
    this.closers.push({ what, close });
  }

  /** An app's HTTP server drained (see HttpDrain), then the app closed. */
  onStopApp(what: string, app: INestApplication): void {
    const drain = new HttpDrain(app.getHttpServer() as Server);
    this.onStop(what, async () => {
      await drain.drain(DRAIN_TIMEOUT_MS, this.logger, what);
      await app.close();
    });
  }

  private stop(signal: string): void {
    // A Ctrl-C under npm arrives twice: from the terminal and forwarded by npm.
    if (this.stopping) return;
    this.stopping = true;
    this.logger.log(`${signal}: shutting down`);
    void (async () => {
      let failed = false;
      for (const { what, close } of [...this.closers].reverse()) {
        try {
          await close();
        } catch (error) {
          failed = true;
          this.logger.error(
            `closing ${what} failed: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
      this.logger.log(failed ? 'stopped, with errors' : 'stopped');
      process.exit(failed ? 1 : 0);
    })();
  }
}

/**
 * Ends an HTTP server without cutting a request short: stop accepting, answer the requests in
 * flight with `Connection: close` and end their connections after them, close the idle ones,
 * and after `timeoutMs` close whatever is left.
 */
export class HttpDrain {
  private readonly open = new Set<ServerResponse>();
  private draining = false;

  constructor(private readonly server: Server) {
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      this.open.add(response);
      if (this.draining) closeAfter(response);
      response.once('close', () => {
        this.open.delete(response);
        // A kept-alive connection would otherwise hold the server open until its idle timeout.
        if (this.draining) request.socket.end();
      });
    });
  }

  async drain(timeoutMs: number, logger: Logger, what: string): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.open.size > 0)
      logger.log(`${what}: waiting for ${this.open.size} request(s) in flight`);
    for (const response of this.open) closeAfter(response);
    this.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>(
      (resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)),
    );
    if (await Promise.race([closed.then(() => false), timedOut])) {
      logger.warn(
        `${what}: ${this.open.size} request(s) still running after ${timeoutMs} ms; closing their connections`,
      );
      this.server.closeAllConnections();
      await closed;
    }
    clearTimeout(timer);
  }
}

function closeAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('connection', 'close');
}
