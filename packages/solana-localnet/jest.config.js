module.exports = require('../../jest.config.base.js')(__dirname, {
  // persistence.test.ts runs litesvm in the jest worker (it restarts the ledger in-process on one data
  // directory); litesvm 0.8.0 leaves the x87 state dirty (LiteSVM/litesvm#171), after which V8's float
  // modulo returns NaN and jest's shuffle of the next suite in that worker crashes. Each suite here
  // creates its own wallets and ledger, so none depends on another's order.
  randomize: false,
});
