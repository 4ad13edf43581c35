// The paid test server's x402 ledger table lives in this package's own test database.
module.exports = require('../../jest.config.base.js').withLedgerDatabase(
  __dirname,
  'api_client_test',
  'API_CLIENT_TEST_DATABASE_URL',
);
