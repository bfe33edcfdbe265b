import { StreamableFile, type HttpException } from '@nestjs/common';
import { isObservable } from 'rxjs';
import type { HttpResponseLike } from './http-exchange';
import type { RenderedException, StoredResponse } from './idempotency.options';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
// What Express picks for a string body without a Content-Type; kept so a replay matches it.
const STRING_CONTENT_TYPE = 'text/html; charset=utf-8';

/**
 * Serialises the handler's result the way it will go on the wire, so the bytes stored are the
 * bytes sent: the first response is sent from this very buffer, like every replay after it.
 */
export function captureResponse(
  value: unknown,
  response: HttpResponseLike,
  storedHeaders: readonly string[],
): StoredResponse {
  const headers = pickHeaders(response, storedHeaders);
  let body = '';
  if (typeof value === 'string') {
    body = value;
    headers['content-type'] ??= STRING_CONTENT_TYPE;
  } else if (value !== undefined && value !== null) {
    if (Buffer.isBuffer(value) || value instanceof StreamableFile || isObservable(value)) {
      throw new TypeError('an @Idempotent() handler must return a JSON-serialisable value or a string');
    }
    body = JSON.stringify(value);
    headers['content-type'] = JSON_CONTENT_TYPE;
  }
  return { statusCode: response.statusCode, headers, body: Buffer.from(body, 'utf8') };
}

/** A stored failure: the rendered exception, plus the allowlisted headers already set. */
export function captureFailure(
  exception: HttpException,
  rendered: RenderedException,
  response: HttpResponseLike,
  storedHeaders: readonly string[],
): StoredResponse {
  const headers = pickHeaders(response, storedHeaders);
  delete headers.location; // a failure created nothing to point at
  for (const [name, value] of Object.entries(rendered.headers ?? {})) {
    headers[name.toLowerCase()] = value;
  }
  headers['content-type'] = rendered.contentType;
  return {
    statusCode: exception.getStatus(),
    headers,
    body: Buffer.from(rendered.body, 'utf8'),
  };
}

/** What the router should send as the body: nothing at all when nothing was stored. */
export function wireBody(stored: StoredResponse): string | undefined {
  return stored.body.length === 0 && !stored.headers['content-type']
    ? undefined
    : stored.body.toString('utf8');
}

function pickHeaders(response: HttpResponseLike, names: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = response.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}
