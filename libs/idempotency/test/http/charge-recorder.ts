import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A charge as the recorder lists it at GET /charges, with the idempotency key it came with. */
export interface RecordedCharge {
  id: string;
  amountCents: number;
  currency: string;
  reference: string;
  status: string;
  idempotencyKey: string;
}

/** How the recorder treats `Idempotency-Key`. */
export interface ChargeRecorderOptions {
  /** Every `POST /charges` charges, key or not, as a processor without idempotency does. */
  ignoreKeys?: boolean;
}

/**
 * Another system for the phased suite to call: a card processor reduced to what the suite
 * observes. `POST /charges` records the charge with the `Idempotency-Key` it came with and
 * answers 201 with it; a key it has seen gets the same charge again and records nothing, as a
 * processor that deduplicates does (unless `ignoreKeys`); no key is a 400. `GET /charges` lists
 * every charge recorded, oldest first; `GET /charges?reference=<id>` those with that reference.
 */
export async function startChargeRecorder(
  options: ChargeRecorderOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const charges: RecordedCharge[] = [];
  const server: Server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? '/', 'http://recorder');
    if (url.pathname !== '/charges') return answer(404, { error: 'not found' });
    if (req.method === 'GET') {
      const reference = url.searchParams.get('reference');
      return answer(
        200,
        reference === null ? charges : charges.filter((charge) => charge.reference === reference),
      );
    }
    if (req.method !== 'POST') return answer(405, { error: 'method not allowed' });
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || !key) return answer(400, { error: 'Idempotency-Key required' });
    readJson(req).then(
      (body) => {
        const seen = options.ignoreKeys
          ? undefined
          : charges.find((charge) => charge.idempotencyKey === key);
        const { idempotencyKey: _key, ...view } =
          seen ??
          record(charges, body as Omit<RecordedCharge, 'id' | 'status' | 'idempotencyKey'>, key);
        answer(201, view);
      },
      () => answer(400, { error: 'malformed JSON' }),
    );
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((closed, failed) =>
        server.close((error) => (error ? failed(error) : closed())),
      ),
  };
}

function record(
  charges: RecordedCharge[],
  body: Omit<RecordedCharge, 'id' | 'status' | 'idempotencyKey'>,
  idempotencyKey: string,
): RecordedCharge {
  const charge: RecordedCharge = {
    id: `ch_${randomUUID().replace(/-/g, '')}`,
    amountCents: body.amountCents,
    currency: body.currency,
    reference: body.reference,
    status: 'succeeded',
    idempotencyKey,
  };
  charges.push(charge);
  return charge;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** The charges recorded for `reference`: the side effect the phased suite counts. */
export async function providerCharges(
  providerUrl: string,
  reference: string,
): Promise<RecordedCharge[]> {
  const response = await fetch(`${providerUrl}/charges`);
  if (response.status !== 200) throw new Error(`GET /charges answered ${response.status}`);
  const charges = (await response.json()) as RecordedCharge[];
  return charges.filter((charge) => charge.reference === reference);
}
