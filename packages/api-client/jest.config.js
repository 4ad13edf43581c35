module.exports = require('../../jest.config.base.js')(__dirname);
