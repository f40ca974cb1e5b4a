// Plain Node, no loader: the packages as a CommonJS program requires them.
'use strict';
const process = require('node:process');
const { runChecks } = require('./checks.cjs');

runChecks(require('@petstore/client'), require('@petstore/proto'), process.env).then(
  () => process.stdout.write('CommonJS consumer: ok\n'),
  (error) => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exitCode = 1;
  },
);
