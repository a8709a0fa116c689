// Lint rules: typescript-eslint's recommended set, plus the dependency rule of
// docs/architecture.md: domain code does no I/O, and only storage code touches SQL drivers.
import tseslint from 'typescript-eslint';

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
);
