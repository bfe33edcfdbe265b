import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const WORKSPACE = resolve(__dirname, '../..');
const LIBRARY = join(WORKSPACE, 'libs/idempotency');
/** Not in the tarball, or generated from what is: no reason to pack again when they change. */
const NOT_PACKED = new Set([
  'dist',
  'node_modules',
  'test', // the library's own suites (libs/idempotency/test/)
  'api-report',
  'api-extractor.json',
  'api-extractor.messaging.json',
  'api-extractor.rabbitmq.json',
]);

/**
 * The tarball `npm run pack:lib` made (`npm test` makes it before Jest runs). Refused when a
 * file of the library changed after it was packed: the consumer tests must never prove an old
 * build.
 */
export function libraryTarball(): string {
  const { name, version } = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8'));
  const tarball = join(WORKSPACE, '.data/pack', `${name}-${version}.tgz`);
  if (!existsSync(tarball))
    throw new Error(`${tarball} is missing: run "npm run pack:lib" (npm test does)`);
  const packedAt = statSync(tarball).mtimeMs;
  const newer = listFiles(LIBRARY, NOT_PACKED).find((file) => statSync(file).mtimeMs > packedAt);
  if (newer)
    throw new Error(`${newer} changed after ${tarball} was packed: run "npm run pack:lib"`);
  return tarball;
}

/** Every file under `dir`, skipping files and folders with the given names. */
export function listFiles(dir: string, skip: ReadonlySet<string> = new Set()): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => !skip.has(entry.name))
    .flatMap((entry) =>
      entry.isDirectory() ? listFiles(join(dir, entry.name), skip) : [join(dir, entry.name)],
    );
}
