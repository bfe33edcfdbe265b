import { hash } from 'node:crypto';
import type { HttpRequestLike } from './http-exchange';
import { IdempotencyRejection } from './idempotency.errors';

/** A file that multer (Nest's `FileInterceptor`) took from a multipart body, as read here. */
interface UploadedFileLike {
  fieldname?: unknown;
  originalname?: unknown;
  mimetype?: unknown;
  size?: unknown;
  buffer?: unknown;
}

/** What the fingerprint holds of an uploaded file: never its bytes, a digest of them. */
export interface UploadedFileDigest {
  field: string;
  name: string;
  type: string;
  size: number;
  sha256: string;
}

/**
 * Refuses a request whose body no parser read before this interceptor ran: the fingerprint
 * would see no body at all, and two such requests under one key (two different uploads) would
 * pass for the same. That is a multipart body parsed by a `FileInterceptor` the route runs
 * inside `@Idempotent()`, or a content type no body parser of the app reads.
 */
export function assertBodyParsed(request: HttpRequestLike): void {
  if (request.body !== undefined || !hasBodyOnTheWire(request)) return;
  throw IdempotencyRejection.unfingerprintableRequest(
    'has a body that no parser read before the idempotency interceptor ran (a multipart upload ' +
      'parsed by an interceptor inside @Idempotent(), or a content type no body parser reads), ' +
      'so two different bodies could not be told apart',
  );
}

/**
 * The files multer put on the request (`req.file`, `req.files` as an array or by field), in
 * order, as digests; undefined when there are none, so a request without files is fingerprinted
 * as it always was. A file without its bytes in memory (multer's disk storage) is refused: its
 * digest would mean reading the file back on every request.
 */
export function uploadedFileDigests(
  request: HttpRequestLike & { file?: unknown; files?: unknown },
): UploadedFileDigest[] | undefined {
  const { file, files } = request;
  if (file === undefined && files === undefined) return undefined;
  const all: unknown[] = [];
  if (file !== undefined) all.push(file);
  if (Array.isArray(files)) all.push(...(files as unknown[]));
  else if (typeof files === 'object' && files !== null) {
    for (const field of Object.keys(files).sort()) {
      const list = (files as Record<string, unknown>)[field];
      if (Array.isArray(list)) all.push(...(list as unknown[]));
    }
  }
  return all.length === 0 ? undefined : all.map((each) => digest(each as UploadedFileLike));
}

function digest(file: UploadedFileLike): UploadedFileDigest {
  if (!Buffer.isBuffer(file.buffer)) {
    throw IdempotencyRejection.unfingerprintableRequest(
      'uploads a file whose bytes are not in memory (multer keeps it on disk), so it cannot be ' +
        'told apart from another upload; use memory storage on @Idempotent() routes',
    );
  }
  return {
    field: text(file.fieldname),
    name: text(file.originalname),
    type: text(file.mimetype),
    size: file.buffer.length,
    sha256: hash('sha256', file.buffer, 'hex'),
  };
}

/** multer's fields are strings; anything else counts as none. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Node's parser tells a body by its framing: a non-zero Content-Length, or Transfer-Encoding. */
function hasBodyOnTheWire(request: HttpRequestLike): boolean {
  const { headers } = request;
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = Number(headers['content-length']);
  return Number.isFinite(length) && length > 0;
}
