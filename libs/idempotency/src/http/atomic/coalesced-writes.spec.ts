import { once } from 'node:events';
import { createServer, type Server, Socket } from 'node:net';
import { CoalescedWrites } from './coalesced-writes';

/** Real TCP sockets on loopback: what reaches the other end, and when. */
describe('CoalescedWrites', () => {
  let server: Server;
  let received: Buffer[][];
  let sockets: Socket[];

  beforeEach(async () => {
    received = [];
    sockets = [];
    server = createServer((peer) => {
      const chunks: Buffer[] = [];
      received.push(chunks);
      peer.on('data', (chunk: Buffer) => chunks.push(chunk));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });

  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  });

  async function connect(): Promise<Socket> {
    const address = server.address() as { port: number };
    const socket = new Socket();
    sockets.push(socket);
    socket.connect(address.port, '127.0.0.1');
    await once(socket, 'connect');
    await until(() => received.length === sockets.length);
    return socket;
  }

  const afterThisTurn = () => new Promise<void>((done) => setImmediate(done));

  async function until(condition: () => boolean): Promise<void> {
    for (let tries = 0; !condition(); tries++) {
      if (tries > 200) throw new Error('timed out');
      await new Promise((done) => setTimeout(done, 5));
    }
  }

  it('holds every held socket’s writes until the turn’s check phase, then writes them together', async () => {
    const [first, second] = [await connect(), await connect()];
    const writes = new CoalescedWrites();
    writes.hold(first);
    first.write('a');
    writes.hold(second);
    second.write('b');
    writes.hold(first); // a second query on the same connection in the same turn
    first.write('c');
    // Held: nothing was handed to the kernel yet, both sockets still buffer their bytes.
    expect([first.writableLength, second.writableLength]).toEqual([2, 1]);
    await afterThisTurn();
    expect([first.writableLength, second.writableLength]).toEqual([0, 0]);
    const text = () => received.map((chunks) => Buffer.concat(chunks).toString());
    await until(() => text().join('').length === 3);
    expect(text()).toEqual(['ac', 'b']);
  });

  it('leaves a socket uncorked after its turn: a later write without a hold goes at once', async () => {
    const socket = await connect();
    const writes = new CoalescedWrites();
    writes.hold(socket);
    socket.write('x');
    await afterThisTurn();
    expect(socket.writableCorked).toBe(0);
    socket.write('y');
    expect(socket.writableLength).toBe(0);
    // And a hold in a later turn holds again.
    writes.hold(socket);
    socket.write('z');
    expect(socket.writableLength).toBe(1);
    await afterThisTurn();
    await until(() => Buffer.concat(received[0] ?? []).toString() === 'xyz');
  });

  it('skips a socket destroyed before its turn ended, and still releases the others', async () => {
    const [doomed, alive] = [await connect(), await connect()];
    const writes = new CoalescedWrites();
    writes.hold(doomed);
    doomed.write('lost');
    writes.hold(alive);
    alive.write('kept');
    doomed.destroy();
    await afterThisTurn();
    expect(alive.writableLength).toBe(0);
    await until(() => Buffer.concat(received[1] ?? []).toString() === 'kept');
    // A destroyed socket is not held again.
    const corked = doomed.writableCorked;
    writes.hold(doomed);
    expect(doomed.writableCorked).toBe(corked);
  });

  it('holds nothing without a socket (a driver without one, such as pg-native)', async () => {
    const writes = new CoalescedWrites();
    expect(() => writes.hold(undefined)).not.toThrow();
    await afterThisTurn();
  });
});
