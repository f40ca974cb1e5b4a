import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { expressionAllowed, licenceProblems, parseAllowList } from '../licence-policy';

const allowed = parseAllowList(readFileSync(join(__dirname, '..', '..', '.ci', 'allowed-licences.txt'), 'utf8'));

describe('licence policy of the services’ production dependencies', () => {
  it('reads the allow-list kept in the repository, comments aside', () => {
    expect([...allowed]).to.include.members(['MIT', 'Apache-2.0', 'ISC']);
    expect([...allowed].every((id) => /^[A-Za-z0-9.+-]+$/.test(id))).to.equal(true);
  });

  it('judges SPDX expressions: OR needs one side, AND both, parentheses group, WITH by the licence', () => {
    expect(expressionAllowed('MIT', allowed)).to.equal(true);
    expect(expressionAllowed('GPL-3.0-only', allowed)).to.equal(false);
    expect(expressionAllowed('(BSD-3-Clause OR GPL-2.0)', allowed)).to.equal(true);
    expect(expressionAllowed('MIT AND GPL-3.0-only', allowed)).to.equal(false);
    expect(expressionAllowed('(MIT AND ISC) OR GPL-3.0-only', allowed)).to.equal(true);
    expect(expressionAllowed('GPL-2.0-only WITH Classpath-exception-2.0', allowed)).to.equal(false);
    expect(expressionAllowed('Apache-2.0 WITH LLVM-exception', allowed)).to.equal(true);
  });

  it('names each third-party component without a licence or with one not allowed; skips the workspace’s own', () => {
    const problems = licenceProblems(
      [
        { name: 'gateway', version: '1.0.0', purl: 'pkg:npm/%40petstore/gateway@1.0.0' },
        { name: 'ajv', version: '8.20.0', purl: 'pkg:npm/ajv@8.20.0', licenses: [{ license: { id: 'MIT' } }] },
        { name: 'copyleft', version: '1.0.0', purl: 'pkg:npm/copyleft@1.0.0', licenses: [{ license: { id: 'AGPL-3.0-only' } }] },
        { name: 'unknown', version: '2.0.0', purl: 'pkg:npm/unknown@2.0.0' },
        { name: 'dual', version: '3.0.0', purl: 'pkg:npm/dual@3.0.0', licenses: [{ expression: '(MIT OR GPL-3.0-only)' }] },
      ],
      allowed,
    );
    expect(problems).to.deep.equal(['copyleft@1.0.0: AGPL-3.0-only is not on .ci/allowed-licences.txt', 'unknown@2.0.0: no licence declared']);
  });
});
