import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that can hold the server's first answer on each new
 * connection (`loginDelayMs`): a PgBouncer in front of it then takes that long to log a server
 * connection in, so a test can catch a login in flight. Bytes pass unchanged otherwise.
 */
export class SlowLoginProxy {
  /** How long the server's first bytes on each new connection are held back. */
  loginDelayMs = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly listener: Server,
    private readonly server: URL,
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards to the PostgreSQL of `serverUrl`. */
  static async start(serverUrl: string): Promise<SlowLoginProxy> {
    const server = new URL(serverUrl);
    const listener = createServer();
    const proxy = new SlowLoginProxy(listener, server);
    listener.on('connection', (client) => proxy.forward(client));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `serverUrl` with the proxy's address. */
  get url(): string {
    const address = this.listener.address();
    if (address === null || typeof address === 'string') throw new Error('proxy not listening');
    const url = new URL(this.server.toString());
    url.hostname = '127.0.0.1';
    url.port = String(address.port);
    return url.toString();
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.listener.close(() => resolve()));
  }

  private forward(client: Socket): void {
    const upstream = createConnection(
      Number(this.server.port || 5432),
      this.server.hostname.replace(/^\[|\]$/g, ''),
    );
    const delay = this.loginDelayMs;
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined); // the other side's close ends both
      socket.on('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.once('data', (first: Buffer) => {
      upstream.pause();
      setTimeout(() => {
        client.write(first);
        upstream.pipe(client);
        upstream.resume();
      }, delay);
    });
  }
}
