import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/', 'proto/gen/', 'client/src/gen/', 'bench/gen-es/', '**/dist/', '.bench/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
  {
    // The release check's consumer project: plain Node programs, CommonJS ones included, written
    // as a customer of the published packages writes them.
    files: ['.ci/release-check/consumer/**'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', fetch: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // mongosh scripts the MongoDB pods run: mongosh's globals, and Node's require.
    files: ['deploy/**/*.js'],
    languageOptions: { globals: { require: 'readonly', process: 'readonly', db: 'readonly', rs: 'readonly', sleep: 'readonly', print: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
