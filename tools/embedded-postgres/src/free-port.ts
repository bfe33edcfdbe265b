import { createServer } from 'net';
import { HOST } from './constants';

/**
 * Ports this process was given already. The OS may hand out a port again as soon as the probe
 * closed it: two calls in a row (an app's port and its embedded PostgreSQL's, say) then got the
 * same one, and the second server to bind it failed with EADDRINUSE.
 */
const handedOut = new Set<number>();
const TRIES = 200;

/**
 * Where the ports come from. By default the OS picks them from its ephemeral range. It hands the
 * same port to every process that asks in the same instant, though: processes that probe at
 * once (a test runner's workers) take a stripe each with `usePortStripe`.
 */
let stripe: { slot: number; of: number } | undefined;

/**
 * Below Linux's default ephemeral range (32768–60999): the OS gives this range neither to its own
 * picks nor to the local end of an outgoing connection.
 */
const STRIPED_LOWEST = 15_000;
const STRIPED_HIGHEST = 32_767;

/**
 * From now on this process draws its ports at random below the OS's ephemeral range, only those
 * equal to `slot` modulo `of`: processes with different slots are never given one port, and
 * none of them a port the OS hands to another process.
 */
export function usePortStripe(slot: number, of: number): void {
  if (!Number.isInteger(of) || of < 1 || !Number.isInteger(slot) || slot < 0 || slot >= of)
    throw new Error(`usePortStripe: slot must be an integer from 0 to ${of - 1}, got ${slot}`);
  stripe = { slot, of };
}

/** A free TCP port on 127.0.0.1, one this process was not given before. */
export async function findFreePort(): Promise<number> {
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const port = await (stripe ? probe(stripedCandidate(stripe)) : probe(0));
    if (port !== undefined && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port that this process was not given already, in ${TRIES} tries`);
}

function stripedCandidate({ slot, of }: { slot: number; of: number }): number {
  const count = Math.floor((STRIPED_HIGHEST - STRIPED_LOWEST - slot) / of) + 1;
  return STRIPED_LOWEST + slot + of * Math.floor(Math.random() * count);
}

/** Listens on `port` (0: the OS's choice) and closes: the port it got, or undefined if taken. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    server.listen({ port, host: HOST, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => (bound ? resolve(bound) : reject(new Error('The OS returned no port'))));
    });
  });
}
