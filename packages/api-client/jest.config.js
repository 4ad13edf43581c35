// The paid test server's x402 ledger table lives in this package's own test database.
const base = require('../../jest.config.base.js');
process.env.X402_TEST_DATABASE_URL ??=
  process.env.API_CLIENT_TEST_DATABASE_URL ??
  `postgresql://postgres@127.0.0.1:5432/api_client_test_p${process.env.TEST_RUN_ID}`;

module.exports = base(__dirname, {
  // Creates the database and the x402_payments table once per run.
  globalSetup: require.resolve('@repo/x402-ledger/jest-global-setup'),
  // Drops this run's test databases (and those of runs that died).
  globalTeardown: require.resolve('@repo/service-kit/jest-global-teardown'),
});
