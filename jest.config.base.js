// Shared jest configuration: TypeScript through SWC (type checking is the typecheck task's job),
// workspace packages resolved to their TypeScript sources through the "@repo/source" export condition.

// One id per jest run, set before its workers start so they all inherit it: test databases and vhosts
// are named `<name>_p<id>` (runScoped in @repo/service-kit/testing), so two runs never share one.
process.env.TEST_RUN_ID ??= String(process.pid);

/** @param {string} dir the package directory (pass __dirname) */
module.exports = function jestConfig(dir, overrides = {}) {
  return {
    rootDir: dir,
    testEnvironment: 'node',
    testEnvironmentOptions: { customExportConditions: ['@repo/source', 'node', 'require', 'default'] },
    testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
    transform: {
      '^.+\\.(t|j)sx?$': [
        '@swc/jest',
        { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
      ],
    },
    // ESM-only dependencies are transformed to CommonJS like our own code.
    transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/)?(bs58|base-x)[@/])'],
    testTimeout: 30000,
    // Tests run in a new order every run (the seed is printed; `--seed N` replays it): none may depend on another.
    randomize: true,
    ...overrides,
  };
};
