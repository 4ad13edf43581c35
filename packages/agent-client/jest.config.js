module.exports = require('../../jest.config.base.js')(__dirname, {
  // Creates the agent_client_test database and the x402_payments table once per run.
  globalSetup: '<rootDir>/test/global-setup.ts',
});
