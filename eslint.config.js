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
