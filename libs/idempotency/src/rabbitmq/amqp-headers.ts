import { MAX_SHORT_STRING_BYTES } from '../messaging/messaging.constants';
import { errorText } from '../shared/error-text';

/** amqplib's field-table encoder (`lib/codec`), which it runs on a message's headers. */
interface AmqpCodec {
  encodeTable(buffer: Buffer, value: unknown, offset: number): number;
}

let codec: AmqpCodec | null | undefined;

function amqpCodec(): AmqpCodec | null {
  if (codec === undefined) {
    try {
      // Not a public entry point of amqplib, but the very encoder its publish runs.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded on first use
      codec = require('amqplib/lib/codec') as AmqpCodec;
    } catch {
      codec = null; // another layout: publishes go unchecked, as before
    }
  }
  return codec;
}

/** amqplib encodes a message's headers into a buffer of this size, whatever the frame size. */
const HEADERS_BUFFER = Buffer.alloc(65_536);

/**
 * Why amqplib could not encode `headers`, or undefined when it can: a number it takes for a
 * 64-bit integer but that is out of that range, more than 64 KiB in all, a field name over 255
 * bytes. Checked before a publish reaches the channel: amqplib registers a publish's confirm
 * before it encodes it, so one that fails to encode leaves a confirm for nothing, and every later
 * confirm on that channel would resolve the publish before its own.
 */
export function unencodableHeaders(
  headers: Record<string, unknown> | undefined,
): string | undefined {
  const encoder = amqpCodec();
  if (!headers || !encoder) return undefined;
  let size: number;
  try {
    size = encoder.encodeTable(HEADERS_BUFFER, headers, 0);
  } catch (error) {
    return errorText(error);
  }
  // Past the buffer, amqplib writes a truncated table without an error, and the broker then
  // closes the whole connection (INTERNAL_ERROR).
  return size > HEADERS_BUFFER.length
    ? `${size} bytes of headers, over amqplib's ${HEADERS_BUFFER.length}`
    : undefined;
}

/** Where a dead-letter copy lists the headers of the original it had to leave out. */
export const DROPPED_HEADERS_HEADER = 'x-inbox-dropped-headers';

/**
 * The headers of a dead-letter copy: the original's, then `added`. A received header that amqplib
 * cannot encode again (a double it decoded to a number it now takes for an out-of-range integer)
 * goes as a double, or is left out and named in `x-inbox-dropped-headers`; if the whole still does
 * not encode (over 64 KiB), every original header is left out. The copy must go: the original is
 * acked only once it is safe.
 */
export function encodableCopyHeaders(
  original: Record<string, unknown>,
  added: Record<string, unknown>,
): Record<string, unknown> {
  const all = { ...original, ...added };
  if (unencodableHeaders(all) === undefined) return all;
  const kept: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(original)) {
    const encodable = [
      value,
      ...(typeof value === 'number' ? [{ '!': 'double', value }] : []),
    ].find((candidate) => unencodableHeaders({ [name]: candidate }) === undefined);
    if (encodable === undefined) dropped.push(name);
    else kept[name] = encodable;
  }
  const copy = { ...kept, ...added };
  if (dropped.length > 0) copy[DROPPED_HEADERS_HEADER] = dropped.join(',').slice(0, 1000);
  if (unencodableHeaders(copy) === undefined) return copy;
  return { ...added, [DROPPED_HEADERS_HEADER]: Object.keys(original).join(',').slice(0, 1000) };
}

/** Where a dead-letter copy names the properties of the original it had to leave out. */
export const DROPPED_PROPERTIES_HEADER = 'x-inbox-dropped-properties';

/**
 * The short-string properties of `properties` that amqplib can encode again, and the names of
 * those it cannot. It decodes each byte that is not UTF-8 to U+FFFD, three bytes, so a property
 * another client sent within 255 bytes can come back over them; it would fail the copy's publish
 * as a header can (see `unencodableHeaders`).
 */
export function encodableShortStrings<K extends string>(
  properties: Partial<Record<K, unknown>>,
  names: readonly K[],
): { kept: Partial<Record<K, string>>; dropped: K[] } {
  const kept: Partial<Record<K, string>> = {};
  const dropped: K[] = [];
  for (const name of names) {
    const value = properties[name];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' && Buffer.byteLength(value, 'utf8') <= MAX_SHORT_STRING_BYTES)
      kept[name] = value;
    else dropped.push(name);
  }
  return { kept, dropped };
}
