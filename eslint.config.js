// ESLint: typescript-eslint's strict and stylistic type-checked rules over the sources, the tests,
// the benchmarks, the tools and the config files. Formatting is Prettier's (prettier.config.js).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['node_modules/', '.data/', 'coverage/', '.scratch/', 'corpus/'] },
  {
    files: ['**/*.{ts,js,mjs}'],
    ignores: ['src/api/assets/**'],
    extends: [js.configs.recommended, tseslint.configs.strictTypeChecked, tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        // The JavaScript config files, outside tsconfig.json's include, get a default program.
        projectService: { allowDefaultProject: ['eslint.config.js', 'prettier.config.js', 'src/shared/infra/compile-cache.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The code's object types are `type` aliases (one interface in the whole tree).
      '@typescript-eslint/consistent-type-definitions': ['error', 'type'],
      // `T[]` for a plain element type, `Array<{ … }>` for a compound one, as the code writes them.
      '@typescript-eslint/array-type': ['error', { default: 'array-simple' }],
      // A number prints the same everywhere; other types (undefined, objects) stay refused.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // `return notFound(ctx)` ends a handler early and `() => resolve()` is a callback: the code returns void calls on
      // purpose, and TypeScript already refuses a void value tested or assigned.
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // `const { key_id: _keyId, ...rest } = entries` leaves fields out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // With noUncheckedIndexedAccess, `!` marks an index or a middleware's field the code has just made sure of.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // An `async` body without `await` makes a sync throw a rejection where a promise is expected; dropping it would change that.
      '@typescript-eslint/require-await': 'off',
      // An empty environment variable or header counts as unset: `||` is meant for strings.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      // The control characters are matched on purpose: to refuse them or strip them from what a visitor sent.
      'no-control-regex': 'off',
      // A child process's environment is a copy of process.env: deleting a variable by name is the way to unset it.
      '@typescript-eslint/no-dynamic-delete': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // A test reads an answer's JSON as `any` and lets its assertions check the shape.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowAny: true }],
      // `let h: Harness` is set in beforeAll and still undefined in afterAll when that hook failed: `h?.stop()` is needed.
      '@typescript-eslint/no-unnecessary-condition': 'off',
    },
  },
  {
    // The browser's scripts, served as they are: plain scripts in the style of ES5 (var, function), no types.
    files: ['src/api/assets/**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'script', globals: globals.browser },
  },
);
