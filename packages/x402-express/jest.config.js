// Each package's suites get their own database, so packages tested side by side never share a table.
process.env.X402_TEST_DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/x402_express_test';

module.exports = require('../../jest.config.base.js')(__dirname, {
  // Creates the database and the x402_payments table once per run.
  globalSetup: require.resolve('@repo/x402-ledger/jest-global-setup'),
});
