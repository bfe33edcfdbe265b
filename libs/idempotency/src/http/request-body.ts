import { hash } from 'node:crypto';
import type { HttpRequestLike } from './http-exchange';
import { IdempotencyRejection } from './idempotency.errors';

/**
 * A file an upload middleware left on the request, as read here: multer's (Nest's
 * `FileInterceptor`: `fieldname`, `originalname`, the bytes in `buffer` with memory storage, a
 * `path` with disk storage) or express-fileupload's (`name`, the bytes in `data`, a
 * `tempFilePath` with temporary files).
 */
interface UploadedFileLike {
  fieldname?: unknown;
  originalname?: unknown;
  name?: unknown;
  mimetype?: unknown;
  buffer?: unknown;
  data?: unknown;
  path?: unknown;
  tempFilePath?: unknown;
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
export function assertBodyParsed(request: HttpRequestLike & StreamState): void {
  // null too: a parser that takes a content type without reading it (a plugin that leaves the
  // parts to the handler) may leave that.
  if ((request.body !== undefined && request.body !== null) || !hasBodyOnTheWire(request)) return;
  throw IdempotencyRejection.unfingerprintableRequest(
    'has a body that no parser read before the idempotency interceptor ran (a multipart upload ' +
      'parsed by an interceptor inside @Idempotent(), or a content type no body parser reads), ' +
      'so two different bodies could not be told apart',
  );
}

/**
 * The files an upload middleware put on the request (`req.file`, `req.files` as an array or by
 * field, one file or several per field), in order, as digests; undefined when there are none,
 * so a request without files is fingerprinted as it always was. Only plain objects count: a
 * plugin may put methods there (`@fastify/multipart` does, on every request). A file whose
 * bytes are not in memory (multer's disk storage, express-fileupload's temporary files) is
 * refused: its digest would mean reading the file back on every request.
 */
export function uploadedFileDigests(
  request: HttpRequestLike & { file?: unknown; files?: unknown },
): UploadedFileDigest[] | undefined {
  const { file, files } = request;
  if (file === undefined && files === undefined) return undefined;
  const found: Array<{ field: string; file: UploadedFileLike }> = [];
  const add = (field: string, value: unknown) => {
    for (const each of Array.isArray(value) ? (value as unknown[]) : [value]) {
      if (isPlainObject(each)) found.push({ field, file: each as UploadedFileLike });
    }
  };
  add('', file);
  if (Array.isArray(files)) add('', files);
  else if (isPlainObject(files)) {
    const byField = files as Record<string, unknown>;
    for (const field of Object.keys(byField).sort()) add(field, byField[field]);
  }
  return found.length === 0 ? undefined : found.map(({ field, file }) => digest(field, file));
}

function digest(field: string, file: UploadedFileLike): UploadedFileDigest {
  const bytes = Buffer.isBuffer(file.buffer) ? file.buffer : file.data;
  const elsewhere = text(file.path) !== '' || text(file.tempFilePath) !== '';
  if (!Buffer.isBuffer(bytes) || (elsewhere && bytes.length === 0)) {
    throw IdempotencyRejection.unfingerprintableRequest(
      'uploads a file whose bytes are not in memory (kept on disk by the upload middleware), so ' +
        'it cannot be told apart from another upload; keep uploads in memory on @Idempotent() routes',
    );
  }
  return {
    field: text(file.fieldname) || field,
    name: text(file.originalname) || text(file.name),
    type: text(file.mimetype),
    size: bytes.length,
    sha256: hash('sha256', bytes, 'hex'),
  };
}

function isPlainObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The upload middlewares' fields are strings; anything else counts as none. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/**
 * Whether the request carries a body: a non-zero Content-Length, or Transfer-Encoding (chunked)
 * unless Node's parser has already seen the whole message and no byte of it is waiting to be
 * read, as for an empty chunked body that nobody read.
 */
function hasBodyOnTheWire(request: HttpRequestLike & StreamState): boolean {
  const { headers } = request;
  if (headers['transfer-encoding'] !== undefined) {
    return !(request.complete === true && request.readableLength === 0);
  }
  const length = Number(headers['content-length']);
  return Number.isFinite(length) && length > 0;
}

/** What Node's `IncomingMessage` says of its body stream (absent on a Fastify request). */
interface StreamState {
  complete?: boolean;
  readableLength?: number;
}
