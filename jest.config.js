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
  // A worker that has run dozens of e2e files holds a heap of a GB or more, mostly garbage not yet
  // collected, and tearing that down at exit took longer than the half second Jest waits before it
  // kills the worker with "a worker process has failed to exit gracefully" (750 ms at 1.2 GB; no
  // handle was left open). Recycled past this heap, the workers ended the suite at 70 to 240 MB and
  // exited in under 80 ms, in the same total time (eight recycles in a run).
  workerIdleMemoryLimit: '768MB',
  // Below that limit a worker still ends the suite with 600 MB of heap or so, and its exit, once
  // Jest tells it to end, outlasted the half second Jest waits by default: the warning came back in
  // CI and in a run that logged the workers' end (2026-12-03), with no handle open (their event
  // loops were empty, their 'exit' events within a millisecond of Jest's end message). A test that
  // leaves a handle open still gets the warning: it keeps the worker alive longer than this.
  workerGracefulExitTimeout: 3000,
  collectCoverageFrom: ['src/**/*.ts', '!src/**/*.spec.ts', '!src/**/*.e2e-spec.ts', '!src/main.ts'],
  coverageThreshold: {
    './src/capabilities/': { lines: 100, branches: 100, functions: 100, statements: 100 },
  },
};
