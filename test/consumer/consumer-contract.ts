import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import type { AppProcess } from '../support/app-process';
import { postRaw, uniqueKey } from '../support/http';
import { ConsumerApp, type ConsumerVariant } from './consumer-app';
import { listFiles } from './library-tarball';
import { ScratchDatabase } from './scratch-database';

/**
 * Packages whose classes or module-level state the library and the app must share: a second
 * copy of any of them is a second DI token, async context or metadata store.
 */
const SHARED_WITH_APP = [
  '@nestjs/common',
  '@nestjs/core',
  'nestjs-cls',
  '@nestjs-cls/transactional',
  '@nestjs-cls/transactional-adapter-typeorm',
  'typeorm',
  'class-transformer',
  'rxjs',
  'reflect-metadata',
];

/**
 * Optional peers: loaded only by the features that need them (OpenAPI, GraphQL, the RabbitMQ
 * transport), so an app without them installs and runs the library as is.
 */
const OPTIONAL_PEERS = [
  '@nestjs/swagger',
  '@nestjs/graphql',
  'graphql',
  '@nestjs/microservices',
  'amqp-connection-manager',
  'amqplib',
];
/**
 * The optional peers the scratch app does not install. It installs the GraphQL ones for its
 * resolver; that no entry point loads them is checked on what requiring each one loads.
 */
const OPTIONAL_PEERS_NOT_INSTALLED = OPTIONAL_PEERS.filter(
  (name) => !['@nestjs/graphql', 'graphql'].includes(name),
);

/** The package's entry points, the build file each resolves to, and some of their exports. */
const ENTRY_POINTS = {
  'nestjs-pg-idempotency': {
    file: 'dist/index.js',
    exports: ['IdempotencyModule', 'Idempotent', 'IdempotentPhases', 'idempotencyMigrations'],
  },
  'nestjs-pg-idempotency/messaging': {
    file: 'dist/messaging/index.js',
    exports: [
      'IdempotencyMessagingModule',
      'Inbox',
      'InboxHandler',
      'Outbox',
      'messagingMigrations',
    ],
  },
  'nestjs-pg-idempotency/rabbitmq': {
    file: 'dist/rabbitmq/index.js',
    exports: ['RabbitMqTransport', 'MESSAGE_ID_HEADER', 'FixedPatternDeserializer'],
  },
} as const;
type EntryPoint = keyof typeof ENTRY_POINTS;

/**
 * The values more than one entry point exports, on purpose: the errors' base class, so that
 * `instanceof IdempotencyError` needs no second import. Anything else is exported once.
 */
const SHARED_VALUES = {
  IdempotencyError: ['nestjs-pg-idempotency', 'nestjs-pg-idempotency/messaging'],
};

/** What test/consumer/fixture/entry-points/cjs.cjs prints. */
interface CommonJsReport {
  entryPoints: Record<
    EntryPoint,
    { file: string; exports: string[]; libraryFiles: string[]; packages: string[] }
  >;
  shared: Record<string, { specifiers: EntryPoint[]; oneObject: boolean }>;
  deepImport: string;
}

/** What test/consumer/fixture/entry-points/esm.mjs prints. */
interface EsModuleReport {
  named: string[];
  entryPoints: Record<EntryPoint, { file: string; exports: string[]; sameAsRequire: boolean }>;
}

/** What a user's app, installed from the tarball, must see: the same on every variant. */
export function describeConsumer(variant: ConsumerVariant): void {
  describe(`the packed library in a scratch app outside the workspace: ${variant.title}`, () => {
    let app: ConsumerApp;

    beforeAll(async () => {
      app = await ConsumerApp.prepare(variant);
    }, 10 * 60_000);

    afterAll(() => app?.remove());

    it('declares as peers exactly the packages the app must share with it, and the optional ones as optional', () => {
      const manifest = app.libraryManifest() as {
        peerDependencies?: Record<string, string>;
        peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      };
      const optional = Object.entries(manifest.peerDependenciesMeta ?? {})
        .filter(([, meta]) => meta.optional)
        .map(([name]) => name);
      const required = Object.keys(manifest.peerDependencies ?? {}).filter(
        (name) => !optional.includes(name),
      );
      expect(required.sort()).toEqual([...SHARED_WITH_APP].sort());
      expect(optional.sort()).toEqual([...OPTIONAL_PEERS].sort());
    });

    it('installs with every peer in range, and one copy of each shared package (npm ls)', async () => {
      // Nothing missing, nothing extraneous, no peer out of its range: exit code 0, unless the
      // variant names a conflict between third-party packages (never the library's peers).
      const tree = await app.npm(['ls', '--all'], { allowFailure: true });
      const problems = new Set(
        tree.stdout
          .split('\n')
          .filter((line) => / invalid: | extraneous|UNMET DEPENDENCY| missing: /.test(line))
          .map((line) => line.replace(/^[\s│├└─┬]+/, '')),
      );
      const known = variant.knownPeerConflicts ?? [];
      expect({ problems: [...problems].sort(), code: tree.code }).toEqual({
        problems: [...known].sort(),
        code: known.length === 0 ? 0 : 1,
      });
      const found = await app.npm(['ls', '--all', '--parseable', ...SHARED_WITH_APP]);
      const paths = found.stdout.split('\n').filter((line) => line.includes('node_modules'));
      for (const name of SHARED_WITH_APP) {
        const copies = paths.filter((path) => path.endsWith(`node_modules/${name}`));
        expect({ name, copies }).toEqual({ name, copies: [join(app.dir, 'node_modules', name)] });
      }
    });

    it("installs no package that declares another Node.js than the app's (EBADENGINE)", () => {
      // On Node 20 this needs the fixture's `overrides`: @apollo/server's newest
      // @graphql-tools/utils pulls @whatwg-node/promise-helpers 2, which wants Node >= 22.15.
      expect(app.installWarnings).not.toMatch(/EBADENGINE/);
    });

    it('ships only the build output, README, CHANGELOG and LICENSE', () => {
      const files = listFiles(app.libraryDir(), new Set(['node_modules'])).map((file) =>
        relative(app.libraryDir(), file),
      );
      expect(files).toEqual(
        expect.arrayContaining([
          ...Object.values(ENTRY_POINTS).flatMap(({ file }) => [file, file.replace(/js$/, 'd.ts')]),
          'README.md',
          'LICENSE',
        ]),
      );
      const unexpected = files.filter(
        (file) =>
          !/^dist\/.+\.(js|js\.map|d\.ts)$/.test(file) &&
          !['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(file),
      );
      expect(unexpected).toEqual([]);
      expect(files.filter((file) => /\.spec\.|(^|\/)(src|test)\//.test(file))).toEqual([]);
    });

    it('imports nothing but its peers, its own dependencies and Node built-ins', () => {
      const manifest = app.libraryManifest();
      const declared = new Set([
        ...Object.keys(manifest.peerDependencies ?? {}),
        ...Object.keys(manifest.dependencies ?? {}),
      ]);
      const imported = new Set<string>();
      for (const file of listFiles(join(app.libraryDir(), 'dist')).filter((f) =>
        /\.(js|d\.ts)$/.test(f),
      )) {
        const code = readFileSync(file, 'utf8');
        for (const [, specifier] of code.matchAll(
          /(?:\bfrom\s+|\brequire\(\s*|\bimport\(\s*)['"]([^'"]+)['"]/g,
        )) {
          if (!specifier.startsWith('.')) imported.add(packageName(specifier));
        }
      }
      expect(imported).toContain('@nestjs/common'); // the scan sees imports at all
      expect([...imported].filter((name) => !declared.has(name) && !isBuiltin(name))).toEqual([]);
    });

    it('type-checks its declarations with no optional peer in the program, so an app without them compiles', () => {
      // `tsc --listFiles` of the app's check of the entry points' declarations (skipLibCheck off).
      const packages = new Set(
        app.declarationProgram.flatMap((file) => {
          const name = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1];
          return name ? [name] : [];
        }),
      );
      expect(packages).toContain('nestjs-pg-idempotency'); // the list holds the library at all
      expect([...packages].filter((name) => OPTIONAL_PEERS.includes(name))).toEqual([]);
    });

    describe('its three entry points, through the package\'s "exports"', () => {
      let cjs: CommonJsReport;
      let esm: EsModuleReport;

      beforeAll(async () => {
        cjs = await app.runJson<CommonJsReport>('entry-points/cjs.cjs');
        esm = await app.runJson<EsModuleReport>('entry-points/esm.mjs');
      }, 60_000);

      it('resolves each one to its build file and the same exports, from CommonJS and from an ES module', () => {
        expect(esm.named).toEqual(['function', 'function', 'function']);
        const libraryDir = realpathSync(app.libraryDir());
        for (const [specifier, expected] of Object.entries(ENTRY_POINTS)) {
          const fromCjs = cjs.entryPoints[specifier as EntryPoint];
          const fromEsm = esm.entryPoints[specifier as EntryPoint];
          expect({ specifier, cjs: fromCjs.file, esm: fromEsm.file }).toEqual({
            specifier,
            cjs: join(libraryDir, expected.file),
            esm: join(libraryDir, expected.file),
          });
          expect(fromCjs.exports).toEqual(expect.arrayContaining([...expected.exports]));
          // Node finds the CommonJS build's names for named imports, and hands out one instance.
          expect({ specifier, exports: fromEsm.exports }).toEqual({
            specifier,
            exports: fromCjs.exports,
          });
          expect({ specifier, sameAsRequire: fromEsm.sameAsRequire }).toEqual({
            specifier,
            sameAsRequire: true,
          });
        }
        expect(cjs.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
      });

      it('exports each value from one entry point, bar the shared ones, and loads no messaging code with the root', () => {
        expect(cjs.shared).toEqual(
          Object.fromEntries(
            Object.entries(SHARED_VALUES).map(([name, specifiers]) => [
              name,
              { specifiers, oneObject: true },
            ]),
          ),
        );
        const root = cjs.entryPoints['nestjs-pg-idempotency'].libraryFiles;
        expect(root).toContain('index.js');
        expect(root.filter((file) => /^(messaging|inbox|outbox|rabbitmq)\//.test(file))).toEqual(
          [],
        );
        const messaging = cjs.entryPoints['nestjs-pg-idempotency/messaging'].libraryFiles;
        expect(messaging).toContain('messaging/index.js');
        expect(messaging.filter((file) => file.startsWith('rabbitmq/'))).toEqual([]);
      });

      it('loads every entry point without the optional peers installed', () => {
        // The transport loads amqp-connection-manager (and amqplib) when it starts, not before.
        expect(
          OPTIONAL_PEERS_NOT_INSTALLED.filter((name) =>
            existsSync(join(app.dir, 'node_modules', name)),
          ),
        ).toEqual([]);
        expect(Object.keys(cjs.entryPoints)).toHaveLength(3);
      });

      it('loads no optional peer with any entry point, not even the GraphQL ones the app has installed', () => {
        // graphql is required by the first GraphQL request, @nestjs/graphql never.
        for (const name of ['graphql', '@nestjs/graphql'])
          expect(existsSync(join(app.dir, 'node_modules', name))).toBe(true);
        const root = cjs.entryPoints['nestjs-pg-idempotency'].packages;
        expect(root).toContain('@nestjs/common'); // the report sees packages at all
        for (const [specifier, { packages }] of Object.entries(cjs.entryPoints)) {
          expect({
            specifier,
            optional: packages.filter((name) => OPTIONAL_PEERS.includes(name)),
          }).toEqual({ specifier, optional: [] });
        }
      });
    });

    describe('running on its own PostgreSQL database', () => {
      // The fixture seals every stored response with this key (option `encryption`).
      const sealingKeyId = `consumer-${variant.name}`;
      let db: ScratchDatabase;
      let server: AppProcess;

      beforeAll(async () => {
        db = await ScratchDatabase.create(`consumer_${variant.name}_${process.pid}`);
        server = await app.start({
          DATABASE_URL: db.url,
          SEALING_KEY_ID: sealingKeyId,
          SEALING_KEY: randomBytes(32).toString('base64'),
        });
        console.log(
          `consumer ${variant.name} (Node ${app.runtime.version}): ${app.describeTimings()}`,
        );
      }, 60_000);

      afterAll(async () => {
        await server?.stop();
        await db?.drop();
      });

      const createWidget = (body: string, headers: Record<string, string>) =>
        postRaw(server.url, '/widgets', body, headers);
      const widgets = (name: string) =>
        db.query<{ id: string; amount_cents: number }>(
          'SELECT id, amount_cents FROM widgets WHERE name = $1',
          [name],
        );
      const keyRows = (key: string) =>
        db.query<KeyRow>(
          `SELECT endpoint, status, response_code, response_body, response_headers, sealed_with
             FROM idempotency_keys WHERE idem_key = $1`,
          [key],
        );
      const createWidgetOnGraphql = (
        document: string,
        variables: Record<string, unknown>,
        key: string,
      ) =>
        postRaw(server.url, '/graphql', JSON.stringify({ query: document, variables }), {
          'idempotency-key': key,
        });
      /** The row holds the record sealed with the fixture's key: none of `plaintexts` is in it. */
      const expectSealed = (row: KeyRow, plaintexts: string[]) => {
        expect({ sealedWith: row.sealed_with, headers: row.response_headers }).toEqual({
          sealedWith: sealingKeyId,
          headers: null, // sealed inside the envelope with the body
        });
        expect(row.response_body.length).toBeGreaterThan(0);
        for (const plaintext of plaintexts)
          expect({ plaintext, inRow: row.response_body.includes(plaintext) }).toEqual({
            plaintext,
            inRow: false,
          });
      };

      it("has idempotency_keys from the root's idempotencyMigrations, and no messaging table", async () => {
        const tables = await db.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables
            WHERE table_schema = 'public' ORDER BY table_name`,
        );
        expect(tables.map((table) => table.table_name)).toEqual([
          'idempotency_keys',
          'migrations',
          'widgets',
        ]);
      });

      it("resolves the library's providers to one store and one options object, on the app's TransactionHost", async () => {
        const wiring = await (await fetch(`${server.url}/wiring`)).json();
        expect(wiring).toEqual({
          interceptor: 'IdempotencyInterceptor',
          interceptorInstances: expect.any(Number),
          storeInstances: 1,
          distinctStoresUsed: 1,
          distinctOptionsUsed: 1,
          transactionHostInstances: 1,
          interceptorsUseAppTransactionHost: true,
          storesUseAppTransactionHost: true,
        });
        expect(wiring.interceptorInstances).toBeGreaterThanOrEqual(1);
      });

      it('writes one row for one key under 20 concurrent duplicates, and answers them all with the same bytes', async () => {
        const key = uniqueKey();
        const name = `w-${randomUUID()}`;
        const body = JSON.stringify({ name, amountCents: 700 });
        // The first holds its transaction open 300 ms: the others arrive while it runs.
        const answers = await Promise.all(
          Array.from({ length: 20 }, () =>
            createWidget(body, { 'idempotency-key': key, 'x-test-delay-ms': '300' }),
          ),
        );
        expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201));
        expect(new Set(answers.map((answer) => answer.text)).size).toBe(1);
        const rows = await widgets(name);
        expect(rows).toHaveLength(1);
        expect(JSON.parse(answers[0].text).id).toBe(rows[0].id);
        const [keyRow, ...others] = await keyRows(key);
        expect(others).toEqual([]);
        expect(keyRow).toMatchObject({ status: 'completed', response_code: 201 });
        expectSealed(keyRow, [rows[0].id, name]);
      });

      it('replays the first response byte for byte from its sealed row, for a reordered body that spells out its default', async () => {
        const key = uniqueKey();
        const name = `w-${randomUUID()}`;
        const first = await createWidget(JSON.stringify({ name, amountCents: 250 }), {
          'idempotency-key': key,
        });
        expect(first.status).toBe(201);
        const reordered = `{ "color": "red",  "amountCents": 250, "name": ${JSON.stringify(name)} }`;
        const replay = await createWidget(reordered, { 'idempotency-key': key });
        expect(replay.status).toBe(201);
        expect(replay.text).toBe(first.text);
        expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
        const rows = await widgets(name);
        expect(rows).toHaveLength(1);
        expect(JSON.parse(replay.text).id).toBe(rows[0].id);
        const [keyRow] = await keyRows(key);
        expectSealed(keyRow, [rows[0].id, name]);
      });

      it('answers 422 for a key reused with another body, and writes nothing for it', async () => {
        const key = uniqueKey();
        const name = `w-${randomUUID()}`;
        const first = await createWidget(JSON.stringify({ name, amountCents: 250 }), {
          'idempotency-key': key,
        });
        expect(first.status).toBe(201);
        const reused = await createWidget(JSON.stringify({ name, amountCents: 251 }), {
          'idempotency-key': key,
        });
        expect(reused.status).toBe(422);
        expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(reused.text)).toMatchObject({
          type: 'urn:idempotency:key-reused',
          status: 422,
        });
        expect(await widgets(name)).toEqual([expect.objectContaining({ amount_cents: 250 })]);
        expect(await keyRows(key)).toEqual([
          expect.objectContaining({ status: 'completed', response_code: 201 }),
        ]);
      });

      it("rolls the handler's write back with the claim on a transient failure, so the retry runs", async () => {
        const key = uniqueKey();
        const name = `w-${randomUUID()}`;
        const body = JSON.stringify({ name, amountCents: 300 });
        const failed = await createWidget(body, {
          'idempotency-key': key,
          'x-test-fail-after-write': 'true',
        });
        expect(failed.status).toBe(503);
        expect(await widgets(name)).toEqual([]);
        expect(await keyRows(key)).toEqual([]);
        const retry = await createWidget(body, { 'idempotency-key': key });
        expect(retry.status).toBe(201);
        expect(await widgets(name)).toHaveLength(1);
        expect(await keyRows(key)).toEqual([
          expect.objectContaining({ status: 'completed', response_code: 201 }),
        ]);
      });

      it('runs a GraphQL mutation once, in its transaction, and replays it byte for byte from its sealed row', async () => {
        const key = uniqueKey();
        const name = `g-${randomUUID()}`;
        const first = await createWidgetOnGraphql(
          CREATE_WIDGET,
          { input: { name, amountCents: 420 } },
          key,
        );
        expect(first.status).toBe(200);
        const created = JSON.parse(first.text) as CreateWidgetAnswer;
        expect(created.errors).toBeUndefined();
        // Another layout of the same document: the fingerprint is the printed operation.
        const relaidOut = CREATE_WIDGET.replace(/\s+/g, ' ');
        const replay = await createWidgetOnGraphql(
          relaidOut,
          { input: { name, amountCents: 420 } },
          key,
        );
        expect(replay.status).toBe(200);
        expect(replay.text).toBe(first.text);
        const rows = await widgets(name);
        expect(rows).toEqual([{ id: created.data?.createWidget.id, amount_cents: 420 }]);
        const [keyRow, ...others] = await keyRows(key);
        expect(others).toEqual([]);
        expect(keyRow).toMatchObject({
          endpoint: 'GRAPHQL Mutation.createWidget #1',
          status: 'completed',
        });
        expectSealed(keyRow, [rows[0].id, name]);
      });

      it('keeps one key on POST /widgets and on the GraphQL mutation apart: two widgets, two sealed rows', async () => {
        const key = uniqueKey();
        const name = `b-${randomUUID()}`;
        const rest = await createWidget(JSON.stringify({ name, amountCents: 310 }), {
          'idempotency-key': key,
        });
        expect(rest.status).toBe(201);
        const graphql = await createWidgetOnGraphql(
          CREATE_WIDGET,
          { input: { name, amountCents: 310 } },
          key,
        );
        expect((JSON.parse(graphql.text) as CreateWidgetAnswer).errors).toBeUndefined();
        const rows = await widgets(name);
        expect(rows).toHaveLength(2);
        const keyed = await keyRows(key);
        expect(keyed.map((row) => row.endpoint).sort()).toEqual([
          'GRAPHQL Mutation.createWidget #1',
          'POST /widgets',
        ]);
        for (const row of keyed) expectSealed(row, [...rows.map((widget) => widget.id), name]);
      });

      it('answers IDEMPOTENCY_KEY_REUSED for a GraphQL key reused with other variables, and writes nothing for it', async () => {
        const key = uniqueKey();
        const name = `g-${randomUUID()}`;
        const first = await createWidgetOnGraphql(
          CREATE_WIDGET,
          { input: { name, amountCents: 250 } },
          key,
        );
        expect((JSON.parse(first.text) as CreateWidgetAnswer).errors).toBeUndefined();
        const reused = await createWidgetOnGraphql(
          CREATE_WIDGET,
          { input: { name, amountCents: 251 } },
          key,
        );
        const answer = JSON.parse(reused.text) as CreateWidgetAnswer;
        expect(answer.errors?.map((error) => error.extensions?.code)).toEqual([
          'IDEMPOTENCY_KEY_REUSED',
        ]);
        expect(answer.data).toBeNull();
        expect(await widgets(name)).toEqual([expect.objectContaining({ amount_cents: 250 })]);
        expect(await keyRows(key)).toEqual([expect.objectContaining({ status: 'completed' })]);
      });
    });
  });
}

/** A key row as the consumer tests read it. */
interface KeyRow extends Record<string, unknown> {
  endpoint: string;
  status: string;
  response_code: number;
  response_body: Buffer;
  response_headers: unknown;
  sealed_with: string | null;
}

/** The fixture's GraphQL mutation (test/consumer/fixture/src/widgets.resolver.ts). */
const CREATE_WIDGET = `
  mutation CreateWidget($input: CreateWidgetInput!) {
    createWidget(input: $input) { id name amountCents color }
  }
`;

interface CreateWidgetAnswer {
  data?: { createWidget: { id: string; name: string; amountCents: number; color: string } } | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** `@scope/name/deep/path` → `@scope/name`; `name/deep` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}
