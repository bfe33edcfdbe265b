/** One Jest run for every suite; one PostgreSQL for the whole run (test/setup/global-setup.ts). */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

module.exports = {
  rootDir: '.',
  // ts before js: a stale .js beside a .ts must never shadow it.
  moduleFileExtensions: ['ts', 'js', 'json'],
  testRegex: '(libs|apps|test|bench)/.*\\.(spec|e2e-spec)\\.ts$',
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: { '^.+\\.(t|j)s$': swc },
  moduleNameMapper: {
    // The package's entry points only: its exports map gives users no deep imports, so neither
    // do we.
    '^nestjs-pg-idempotency$': '<rootDir>/libs/idempotency/src',
    '^nestjs-pg-idempotency/(messaging|rabbitmq)$': '<rootDir>/libs/idempotency/src/$1',
    // Workspace tooling, not a package ('#' names cannot come from npm). The global set-up, which
    // Jest loads with Node's require and no mapper, finds it through package.json "imports".
    '^#tools/embedded-postgres$': '<rootDir>/tools/embedded-postgres/src',
  },
  testEnvironment: 'node',
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  setupFiles: ['<rootDir>/test/setup/demo-faults-env.ts', '<rootDir>/test/setup/port-stripe.ts'],
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 60_000,
};
