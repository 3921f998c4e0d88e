// @ts-check
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', '.data/', 'bench/results/', 'console/dist/'] },
  eslint.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its error: the bugs these catch are real in a server.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/await-thenable': 'error',
      // `_name` marks a parameter a signature needs but the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Nest modules and decorator-only classes are empty on purpose.
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/consistent-type-imports': 'off',
      // Reflect metadata (`design:type`, `design:paramtypes`) hands constructors over as `Function`.
      '@typescript-eslint/no-unsafe-function-type': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
    },
  },
  {
    // Tokens are counted by src/runtime/output-budget.ts alone, in pieces the tokenizer's quadratic
    // cost cannot blow up on (one run of CJK text is one pre-token).
    files: ['src/**/*.ts'],
    ignores: ['src/runtime/output-budget.ts', 'src/**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['gpt-tokenizer', 'gpt-tokenizer/*'], message: 'Count tokens with countTokens of src/runtime/output-budget.ts (bounded pieces).' },
          ],
          // Quadratic in the list's length: a body of 100,000 distinct names held the event loop 14.5 s.
          paths: [
            { name: 'class-validator', importNames: ['ArrayUnique', 'arrayUnique'], message: 'Use ArrayUnique of src/common/unique-list.ts (one pass).' },
          ],
        },
      ],
    },
  },
  {
    // Tests, benchmarks and scripts read JSON answers whose shape the assertions check.
    files: ['test/**', 'bench/**', 'scripts/**', 'src/**/*.e2e-spec.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
