import { createServer } from 'net';
import { HOST } from './constants';

/**
 * Ports this process was given already. The OS may hand out a port again as soon as the probe
 * closed it: two calls in a row (an app's port and its embedded PostgreSQL's, say) then got the
 * same one, and the second server to bind it failed with EADDRINUSE.
 */
const handedOut = new Set<number>();
const TRIES = 20;

/** Asks the OS for a free TCP port on 127.0.0.1, one this process was not given before. */
export async function findFreePort(): Promise<number> {
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const port = await probeFreePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`the OS kept returning ports this process was given already (${TRIES} tries)`);
}

function probeFreePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: HOST, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => (port ? resolve(port) : reject(new Error('The OS returned no port'))));
    });
  });
}
