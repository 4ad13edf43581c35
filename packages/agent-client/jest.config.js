// These suites' database (the x402 ledger table of the paid test server), apart from other packages'.
process.env.X402_TEST_DATABASE_URL ??=
  process.env.AGENT_CLIENT_TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/agent_client_test';

module.exports = require('../../jest.config.base.js')(__dirname, {
  // Creates the database and the x402_payments table once per run.
  globalSetup: require.resolve('@repo/x402-ledger/jest-global-setup'),
});
