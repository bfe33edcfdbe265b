/**
 * The circle check (`npm run deps:check`): no module may reach itself through its imports. And
 * nothing under `libs/` (the library and its suites) imports the demo, its migrations or `test/`.
 *
 * Type-only imports count. They vanish from the emitted JavaScript, so they cannot break the
 * load order today, but two files that name each other's types still cannot be read or moved
 * apart, and one `import type` turned into a value import later brings back the half-loaded
 * module (a decorator or class `undefined` at the moment it is used). Breaking such a circle
 * costs one shared file for the type.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'This import closes a circle. Move what both files need (a type, a constant, a token) into ' +
        'a file of its own that both import.',
      from: { path: '^(libs|apps|tools|bench|test|migrations)/' },
      to: { circular: true },
    },
    {
      name: 'library-tests-stand-alone',
      severity: 'error',
      comment:
        "The library's suites use the library as a user would, with a support layer of their own " +
        '(libs/idempotency/test/support/): not the demo, its migrations or its tests.',
      from: { path: '^libs/' },
      to: { path: '^(apps|migrations|test)/' },
    },
    {
      name: 'library-layers',
      severity: 'error',
      comment:
        "The library's folders follow its entry points: shared/ serves the others and imports none " +
        'of them, the HTTP path and messaging do not import each other, and only rabbitmq/ (the ' +
        'transport) imports messaging/ (the contract it implements).',
      from: { path: '^libs/idempotency/src/(shared|http|messaging)/', pathNot: '\\.spec\\.ts$' },
      // $1: the importing file's own folder, which it may of course import.
      to: {
        path: '^libs/idempotency/src/(http|messaging|rabbitmq)/',
        pathNot: '^libs/idempotency/src/$1/',
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.data)/' },
    // Sees `import type` and type-only re-exports, which the emitted JavaScript no longer has.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.d.ts', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
