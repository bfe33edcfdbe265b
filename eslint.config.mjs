// ESLint for the whole workspace: typescript-eslint's type-checked rules (floating promises,
// unsafe `any`, misused promises) on every TypeScript file the root tsconfig compiles, and
// Prettier's config last so that no rule argues about formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

const NODE_GLOBALS = Object.fromEntries(
  ['process', 'console', 'setTimeout', 'clearTimeout', 'Buffer', 'URL'].map((name) => [
    name,
    'readonly',
  ]),
);

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'dist-baseline/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // `_name` marks a value taken apart on purpose (a field left out of a rest object).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // Tests read what the wire and the database return: supertest's `body` and TypeORM's raw
    // `query()` rows are `any` by design, and the assertions are what checks their shape.
    files: [
      'test/**/*.ts',
      'libs/*/test/**/*.ts',
      '**/*.spec.ts',
      '**/*.e2e-spec.ts',
      'bench/**/*.ts',
    ],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // `expect(object.method).toHaveBeenCalled()` and spies take methods unbound.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Plain Node scripts of the workspace: no types to check.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: NODE_GLOBALS,
    },
  },
  {
    // CommonJS scripts and configs (jest.config.js, tools/start-demo.js): require() is their import.
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { ...NODE_GLOBALS, __dirname: 'readonly', __filename: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
