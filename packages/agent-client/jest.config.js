// These suites' database (the x402 ledger table of the paid test server), apart from other packages'.
module.exports = require('../../jest.config.base.js').withLedgerDatabase(
  __dirname,
  'agent_client_test',
  'AGENT_CLIENT_TEST_DATABASE_URL',
);
