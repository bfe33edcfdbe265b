import { StreamableFile, type HttpException } from '@nestjs/common';
import { type ClassTransformOptions, instanceToPlain } from 'class-transformer';
import { isObservable } from 'rxjs';
import type { HttpResponseLike } from './http-exchange';
import type { RenderedException, StoredResponse } from './idempotency.options';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
// What Express picks for a string body without a Content-Type; kept so a replay matches it.
const STRING_CONTENT_TYPE = 'text/html; charset=utf-8';

/**
 * Serialises the handler's result once, the way it will go on the wire. Class instances go
 * through class-transformer with the route's `@SerializeOptions()` first, as
 * ClassSerializerInterceptor would do: `@Exclude()`d fields are never stored nor sent.
 */
export function captureResponse(
  value: unknown,
  response: HttpResponseLike,
  storedHeaders: readonly string[],
  serializeOptions: ClassTransformOptions = {},
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
    body = JSON.stringify(typeof value === 'object' ? instanceToPlain(value, serializeOptions) : value);
    headers['content-type'] ??= JSON_CONTENT_TYPE;
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

/**
 * What the interceptor hands on to the interceptors around it and to the router: the parsed
 * value for a JSON body (so they see a value, as from any handler; Express and Fastify turn it
 * back into exactly the stored bytes, as JSON.stringify(JSON.parse(s)) === s for the output of
 * JSON.stringify), the text otherwise, nothing at all when nothing was stored.
 */
export function wireBody(stored: StoredResponse): unknown {
  const contentType = String(stored.headers['content-type'] ?? '');
  if (stored.body.length === 0 && !contentType) return undefined;
  const text = stored.body.toString('utf8');
  return /[/+]json\b/.test(contentType) && text.length > 0 ? JSON.parse(text) : text;
}

function pickHeaders(response: HttpResponseLike, names: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const name of names) {
    const value = response.getHeader(name);
    // Arrays stay arrays: Set-Cookie values must not be joined.
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return headers;
}
