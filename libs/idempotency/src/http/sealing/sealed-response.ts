import type { StoredResponse } from '../idempotency.options';

/**
 * A response as a sealed row holds it: the status stays plain (it says nothing about the
 * content), the headers and body are in `envelope`, sealed with the key `sealedWith`.
 */
export interface SealedResponse {
  statusCode: number;
  sealedWith: string;
  envelope: Buffer;
}

/** What a key row's response columns hold: plain (no encryption, or an older row) or sealed. */
export type RecordedResponse = StoredResponse | SealedResponse;

export function isSealed(response: RecordedResponse): response is SealedResponse {
  return 'envelope' in response;
}
