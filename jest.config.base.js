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

/**
 * The configuration of a package whose suites keep payments in the x402 ledger table (a paid test
 * server): the table lives in the package's own test database, so packages tested side by side never
 * share one. The database and its `x402_payments` table are created once per run and dropped with the
 * run's other test databases (and those of runs that died).
 * @param {string} dir the package directory (pass __dirname)
 * @param {string} name the database's name before `_p<run id>`
 * @param {string} [urlVariable] a variable naming the database's URL instead, when set
 */
module.exports.withLedgerDatabase = function withLedgerDatabase(dir, name, urlVariable) {
  process.env.X402_TEST_DATABASE_URL ??=
    (urlVariable ? process.env[urlVariable] : undefined) ??
    `postgresql://postgres@127.0.0.1:5432/${name}_p${process.env.TEST_RUN_ID}`;
  // Resolved as the package's own config would, so x402-ledger finds itself by name.
  const packageRequire = require('node:module').createRequire(
    require('node:path').join(dir, 'jest.config.js'),
  );
  return module.exports(dir, {
    globalSetup: packageRequire.resolve('@repo/x402-ledger/jest-global-setup'),
    globalTeardown: packageRequire.resolve('@repo/service-kit/jest-global-teardown'),
  });
};
