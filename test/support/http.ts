import { randomUUID } from 'node:crypto';

export const ACME = { tenant: 'acme', authorization: 'Bearer demo_acme' };
export const GLOBEX = { tenant: 'globex', authorization: 'Bearer demo_globex' };

export const uniqueKey = (): string => `key-${randomUUID()}`;
export const uniqueCustomer = (): string => `cus-${randomUUID().slice(0, 18)}`;

/** A raw response as the client saw it, bytes included. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** POSTs raw bytes with fetch, so the test controls whitespace and field order exactly. */
export async function postRaw(
  baseUrl: string,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<RawResponse> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}
