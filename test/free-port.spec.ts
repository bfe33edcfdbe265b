import { createServer } from 'node:net';
import { findFreePort } from '#tools/embedded-postgres';

describe('findFreePort', () => {
  it('never hands one process the same port twice, nor two Jest workers one port, and each is free to bind', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await findFreePort());
    expect(new Set(ports).size).toBe(ports.length);
    // Jest's workers never share a port: each takes its own residue.
    const slot = (Number(process.env.JEST_WORKER_ID) - 1) % 8;
    expect(ports.filter((port) => port % 8 !== slot)).toEqual([]);
    // Below Linux's ephemeral range, where outgoing connections take their local ports.
    expect(ports.filter((port) => port < 15_000 || port > 32_767)).toEqual([]);
    const last = ports[ports.length - 1];
    await new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen({ port: last, host: '127.0.0.1', exclusive: true }, () =>
        server.close(() => resolve()),
      );
    });
  });
});
