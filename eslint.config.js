// Lint rules: typescript-eslint's recommended set, plus the dependency rules of
// docs/architecture.md: domain code does no I/O, and only storage code touches SQL drivers; and
// of docs/console.md: the web console's imports flow one way, lib/ and components/ → features/ → app/.
import tseslint from 'typescript-eslint';

/**
 * The console's layers (console/src/, docs/console.md "How it is built"), checked by import path:
 * no-restricted-imports sees the path as written, so a rule per depth of folder says where `../`
 * leads from there. A feature imports lib/, components/ and itself, never another feature nor
 * app/ (features meet in app/); lib/ and components/ import neither.
 */
const ESC = (depth) => `(\\.\\./){${depth}}`;
const consoleLayers = [0, 1, 2, 3].flatMap((depth) => [
  {
    // A file `depth` folders below its feature's folder: ../ × (depth + 1) is features/, × (depth + 2) is console/src/.
    files: [`console/src/features/*/${'*/'.repeat(depth)}*.{ts,tsx}`],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { regex: `^${ESC(depth + 1)}(?!\\.\\.)`, message: 'A feature never imports another feature: compose them in console/src/app/, or move what they share to lib/ or components/ (docs/console.md).' },
          { regex: `^${ESC(depth + 2)}(features|app)/`, message: 'A feature imports lib/, components/ and itself: never app/, nor another feature (docs/console.md).' },
        ],
      }],
    },
  },
  {
    files: [`console/src/{lib,components}/${'*/'.repeat(depth)}*.{ts,tsx}`],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { regex: `^${ESC(depth + 1)}(features|app)/`, message: 'lib/ and components/ are shared by every feature: they import no feature and not app/ (docs/console.md).' },
        ],
      }],
    },
  },
]);

export default tseslint.config(
  { ignores: ['dist/**', '.build/**', 'node_modules/**', 'data/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // The web example's page: plain JavaScript that no compiler checks, run by the browser as
    // it is. Every name must be declared or the browser's own, and it imports only its own modules
    // (no build step resolves a package name).
    files: ['examples/simple-auth-web/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(['document', 'location', 'fetch', 'URL', 'URLSearchParams', 'AbortSignal', 'TextEncoder', 'crypto', 'setTimeout'].map((name) => [name, 'readonly'])),
    },
    rules: {
      'no-undef': 'error',
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(?!\\./)', message: 'the page loads its own modules only: import ./file.js' }] }],
    },
  },
  {
    // Its static file server, a Node program.
    files: ['examples/simple-auth-web/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly', console: 'readonly' } },
    rules: { 'no-undef': 'error' },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', '@fastify/*', 'pg', '@electric-sql/*', 'node:fs*', 'node:net', 'node:http'], message: 'domain code does no I/O (docs/architecture.md)' },
          { group: ['**/http/*', '**/storage/*', '**/repositories/*', '**/services/*'], message: 'domain depends on nothing outside domain/' },
        ],
      }],
    },
  },
  {
    files: ['src/services/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', '@fastify/*', '**/http/*'], message: 'services know nothing of HTTP' },
          { group: ['pg', '@electric-sql/*'], message: 'services reach storage through repositories' },
        ],
      }],
    },
  },
  ...consoleLayers,
);
