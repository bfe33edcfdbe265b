import {
  type ClassSerializerContextOptions,
  StreamableFile,
  type HttpException,
} from '@nestjs/common';
import { instanceToPlain, plainToInstance } from 'class-transformer';
import { isObservable } from 'rxjs';
import type { HttpResponseLike } from './http-exchange';
import type { RenderedException, StoredResponse } from './idempotency.options';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const EMPTY_TEXT_CONTENT_TYPE = 'text/html; charset=utf-8';

/**
 * Bodies known to come back to the same bytes through JSON.parse and JSON.stringify: written by
 * JSON.stringify in this process, or checked once. `wireBody` skips its check for them, so a
 * create, and every replay from the replay cache, parse their body but never serialise it twice.
 */
const ROUND_TRIP_SAFE = new WeakSet<Buffer>();

/**
 * Serialises the handler's result once, the way it will go on the wire. Class instances go
 * through class-transformer with the route's `@SerializeOptions()` (over its
 * ClassSerializerInterceptor's defaults) first, as that interceptor would do: `@Exclude()`d
 * fields are never stored nor sent.
 */
export function captureResponse(
  value: unknown,
  response: HttpResponseLike,
  storedHeaders: readonly string[],
  serializeOptions: ClassSerializerContextOptions = {},
): StoredResponse {
  const headers = pickHeaders(response, storedHeaders);
  let body = '';
  if (typeof value === 'string') {
    // No Content-Type of its own: the router picks one for the text on every answer alike
    // (Express `text/html`, Fastify `text/plain`), or for what an interceptor around the route
    // makes of it (a `{ data }` wrapper's object is JSON).
    body = value;
    // An empty text without a type would read as no body at all (a handler that returned
    // nothing): on Express, which types text itself, it is stored with Express's type. (A
    // Fastify reply, known by its `raw`, types it `text/plain`; there it goes untyped.)
    if (value === '' && !('raw' in response)) headers['content-type'] ??= EMPTY_TEXT_CONTENT_TYPE;
  } else if (value !== undefined && value !== null) {
    if (Buffer.isBuffer(value) || value instanceof StreamableFile || isObservable(value)) {
      throw new TypeError(
        'an @Idempotent() handler must return a JSON-serialisable value or a string',
      );
    }
    body = JSON.stringify(
      needsClassTransformer(value, serializeOptions) ? toPlain(value, serializeOptions) : value,
    );
    headers['content-type'] ??= JSON_CONTENT_TYPE;
    const bytes = Buffer.from(body, 'utf8');
    // JSON.stringify's own output parses back to a value it writes the same way; a bare string
    // value is the exception (the router would send it as text).
    if (!body.startsWith('"')) ROUND_TRIP_SAFE.add(bytes);
    return { statusCode: response.statusCode, headers, body: bytes };
  }
  return { statusCode: response.statusCode, headers, body: Buffer.from(body, 'utf8') };
}

/** As ClassSerializerInterceptor: data that is not of `@SerializeOptions({ type })` becomes it first. */
function toPlain(value: object, options: ClassSerializerContextOptions): unknown {
  const { type } = options;
  if (type === undefined || value instanceof type) return instanceToPlain(value, options);
  return instanceToPlain(plainToInstance(type, value, options) as object, options);
}

/**
 * Whether `value` must go through class-transformer before it is serialised. Plain data
 * (primitives, arrays, plain objects and dates, nothing else) without `@SerializeOptions()` comes
 * out of `instanceToPlain` as a copy with the same JSON: skipping the copy saves its time and
 * garbage on the common path. Anything else (a class instance, a Map, a function) takes it.
 */
function needsClassTransformer(
  value: unknown,
  serializeOptions: ClassSerializerContextOptions,
): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.keys(serializeOptions).length > 0 || !isPlainData(value, 0);
}

const MAX_PLAIN_DEPTH = 32;

function isPlainData(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object')
    return typeof value !== 'function' && typeof value !== 'symbol';
  if (depth > MAX_PLAIN_DEPTH) return false;
  if (Array.isArray(value)) return value.every((item) => isPlainData(item, depth + 1));
  if (value instanceof Date) return true;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) {
    if (!isPlainData((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
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
 * JSON.stringify), the text otherwise, nothing at all when nothing was stored. JSON text the
 * handler wrote itself goes out as text unless that round trip gives it back unchanged: a
 * number JavaScript cannot hold, `1.50` or text that is no JSON at all must reach the client as
 * the handler wrote it, not re-serialised (or failing after the commit).
 */
export function wireBody(stored: StoredResponse): unknown {
  const contentType = contentTypeOf(stored);
  if (stored.body.length === 0 && !contentType) return undefined;
  const text = stored.body.toString('utf8');
  if (!/[/+]json\b/.test(contentType) || text.length === 0) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  if (ROUND_TRIP_SAFE.has(stored.body)) return value;
  if (JSON.stringify(value) !== text) return text;
  // A JSON string would be sent by the router as bare text, so its JSON text goes on; but a
  // `Date`'s goes on as that `Date`, which the router, a `{ data }` wrapper and
  // ClassSerializerInterceptor all write back as the same JSON string.
  if (typeof value === 'string') return isDateJson(value) ? new Date(value) : text;
  ROUND_TRIP_SAFE.add(stored.body);
  return value;
}

function isDateJson(value: string): boolean {
  const date = new Date(value);
  return !Number.isNaN(date.getTime()) && date.toJSON() === value;
}

/**
 * The stored JSON body as text that Nest's Express adapter sends unchanged, where it would send
 * the same bytes for `wireBody`'s value: undefined otherwise, and the caller sends that value.
 * Only for `application/json` (for another type the adapter may replace the Content-Type of an
 * object body with a `statusCode` of 400 or more), and never for the JSON `null`, which the
 * adapter answers with no body at all. Skips the parse and the router's serialisation; only
 * where nothing between the interceptor and the wire needs a value (`isOutermostInterceptor`).
 */
export function verbatimJsonBody(stored: StoredResponse): string | undefined {
  if (!contentTypeOf(stored).startsWith('application/json')) return undefined;
  const text = stored.body.toString('utf8');
  return text.length > 0 && text !== 'null' ? text : undefined;
}

function contentTypeOf(stored: StoredResponse): string {
  return String(stored.headers['content-type'] ?? '');
}

function pickHeaders(
  response: HttpResponseLike,
  names: readonly string[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const name of names) {
    const value = response.getHeader(name);
    // Arrays stay arrays: Set-Cookie values must not be joined.
    if (value !== undefined)
      headers[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return headers;
}

/** A copy of `stored` that shares nothing with it: headers, arrays of headers and body. */
export function copyOfStored(stored: StoredResponse): StoredResponse {
  const headers: StoredResponse['headers'] = {};
  for (const name in stored.headers) {
    const value = stored.headers[name];
    headers[name] = Array.isArray(value) ? [...value] : value;
  }
  return { ...stored, headers, body: Buffer.from(stored.body) };
}
