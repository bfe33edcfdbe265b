import { ACME, postRaw, type RawResponse, uniqueCustomer, uniqueKey } from './http';

/** A fresh order of 5000 cents for acme, created through the demo at `url`; its id. */
export async function newOrder(url: string): Promise<string> {
  const res = await postRaw(
    url,
    '/v1/orders',
    JSON.stringify({ customerId: uniqueCustomer(), amountCents: 5000 }),
    { authorization: ACME.authorization, 'idempotency-key': uniqueKey() },
  );
  if (res.status !== 201) throw new Error(`creating an order answered ${res.status}: ${res.text}`);
  return (JSON.parse(res.text) as { id: string }).id;
}

/** `POST /v1/payments` as acme under `key`, with an `X-Demo-Fault` when given. */
export function pay(
  url: string,
  key: string,
  orderId: string,
  amountCents: number,
  fault?: string,
): Promise<RawResponse> {
  return postRaw(url, '/v1/payments', JSON.stringify({ orderId, amountCents }), {
    authorization: ACME.authorization,
    'idempotency-key': key,
    ...(fault ? { 'x-demo-fault': fault } : {}),
  });
}
