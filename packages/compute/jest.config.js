module.exports = require('../../jest.config.base.js')(__dirname, {
  // Drops this run's test databases and vhosts (and those of runs that died).
  globalTeardown: require.resolve('@repo/service-kit/jest-global-teardown'),
});
