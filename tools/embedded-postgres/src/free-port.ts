import { createServer } from 'net';
import { HOST } from './constants';

/**
 * Ports are drawn at random below Linux's default ephemeral range (32768–60999), not asked of
 * the OS: the OS hands the same port to every process that asks in the same instant (and again
 * to one process as soon as its probe closed it), and it gives ports of that range to outgoing
 * connections as well.
 */
const LOWEST = 15_000;
const HIGHEST = 32_767;

/**
 * Jest's workers probe at the same time. Each takes only the ports of its own residue modulo
 * `STRIDE`, so no two are ever given one port: else a test's health check could be answered by
 * another worker's app.
 */
const STRIDE = 8;
const workerId = Number(process.env.JEST_WORKER_ID);
const slot = Number.isInteger(workerId) && workerId > 0 ? (workerId - 1) % STRIDE : 0;
const step = Number.isInteger(workerId) && workerId > 0 ? STRIDE : 1;

/** Ports this process was given already: the server they were meant for may not be up yet. */
const handedOut = new Set<number>();
const TRIES = 200;

/** A free TCP port on 127.0.0.1, one this process was not given before. */
export async function findFreePort(): Promise<number> {
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const port = randomCandidate();
    if (!handedOut.has(port) && (await canListen(port))) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${LOWEST} and ${HIGHEST} in ${TRIES} tries`);
}

function randomCandidate(): number {
  const count = Math.floor((HIGHEST - LOWEST - slot) / step) + 1;
  return LOWEST + slot + step * Math.floor(Math.random() * count);
}

function canListen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host: HOST, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
