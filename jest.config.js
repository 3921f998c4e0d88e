/** Every test file gets its own database (see test/support/test-app.ts), so files run in parallel safely. */
const swc = [
  '@swc/jest',
  {
    sourceMaps: 'inline',
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

// ESM-only packages pulled in by our dependencies; Jest must transpile them to CommonJS.
const esmPackages = ['content-disposition', 'jose'];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  testTimeout: 60000,
  // Migrate once per run into a template; every file's database is a copy (test/support/global-setup.ts).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  maxWorkers: process.env.JEST_MAX_WORKERS || 2,
  collectCoverageFrom: ['src/**/*.ts', '!src/**/*.spec.ts', '!src/**/*.e2e-spec.ts', '!src/main.ts'],
  coverageThreshold: {
    './src/capabilities/': { lines: 100, branches: 100, functions: 100, statements: 100 },
  },
};
