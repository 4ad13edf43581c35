// forceExit: after the last suite something (not found by --detectOpenHandles: no sockets, no child
// processes) keeps jest waiting for minutes; every suite closes its servers, pools and workers itself.
module.exports = { ...require('../../jest.config.base.js')(__dirname), forceExit: true };
