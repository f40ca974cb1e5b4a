// Plain Node, no loader: the packages as an ES module program imports them.
import { createRequire } from 'node:module';
import process from 'node:process';
import * as client from '@petstore/client';
import * as proto from '@petstore/proto';
import checks from './checks.cjs';

// One copy of each class, whether imported or required (the ES entry re-exports the CommonJS one).
const require = createRequire(import.meta.url);
if (require('@petstore/client').PetstoreError !== client.PetstoreError) throw new Error('two PetstoreError classes');

await checks.runChecks(client, proto, process.env);
process.stdout.write('ESM consumer: ok\n');
