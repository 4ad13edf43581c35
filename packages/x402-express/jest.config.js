// Each package's suites get their own database, so packages tested side by side never share a table.
const base = require('../../jest.config.base.js');
process.env.X402_TEST_DATABASE_URL ??= `postgresql://postgres@127.0.0.1:5432/x402_express_test_p${process.env.TEST_RUN_ID}`;

module.exports = base(__dirname, {
  // Creates the database and the x402_payments table once per run.
  globalSetup: require.resolve('@repo/x402-ledger/jest-global-setup'),
  // Drops this run's test databases and vhosts (and those of runs that died).
  globalTeardown: require.resolve('@repo/service-kit/jest-global-teardown'),
});
