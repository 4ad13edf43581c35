// Each package's suites get their own database, so packages tested side by side never share a table.
module.exports = require('../../jest.config.base.js').withLedgerDatabase(__dirname, 'x402_express_test');
