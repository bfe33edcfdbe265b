import { createServer } from 'node:net';
import { findFreePort } from '#tools/embedded-postgres';

describe('findFreePort', () => {
  it('never hands one process the same port twice, and each is free to bind', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await findFreePort());
    expect(new Set(ports).size).toBe(ports.length);
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
