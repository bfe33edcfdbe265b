import { createServer } from 'node:net';
import { findFreePort, usePortStripe } from '#tools/embedded-postgres';

describe('findFreePort', () => {
  it("never hands one process the same port twice, draws from its Jest worker's stripe, and each is free to bind", async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await findFreePort());
    expect(new Set(ports).size).toBe(ports.length);
    // test/setup/port-stripe.ts: below the OS's ephemeral range, this worker's residue only.
    const slot = (Number(process.env.JEST_WORKER_ID ?? 1) - 1) % 8;
    expect(ports.filter((port) => port % 8 !== slot)).toEqual([]);
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

  it('never hands out a port that something listens on', async () => {
    // A stripe as wide as the whole range holds one port: listen on it, and there is none left.
    const WIDTH = 32_767 - 15_000 + 1;
    const taken = createServer();
    let port = 15_000;
    while (
      !(await new Promise<boolean>((resolve) => {
        taken.once('error', () => resolve(false));
        taken.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(true));
      }))
    )
      port++;
    try {
      usePortStripe(port - 15_000, WIDTH);
      await expect(findFreePort()).rejects.toThrow(/no free port/);
    } finally {
      usePortStripe((Number(process.env.JEST_WORKER_ID ?? 1) - 1) % 8, 8);
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('refuses a slot outside its stripes', () => {
    expect(() => usePortStripe(8, 8)).toThrow(/slot must be an integer from 0 to 7/);
  });
});
