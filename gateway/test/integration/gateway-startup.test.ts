import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'chai';

const ROOT = join(__dirname, '..', '..', '..');

describe('gateway startup with a bad rate-limit setting', () => {
  for (const [name, value] of [
    ['BAN_THRESHOLD', 'ten'],
    ['REDIS_URL', 'http://localhost:6379'],
    ['TRUST_PROXY', 'the-ingress'],
  ]) {
    it(`exits 1 with one line naming ${name}`, function () {
      this.timeout(20_000);
      const result = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'gateway', 'src', 'main.ts')], {
        env: { ...process.env, PORT: '0', ADMIN_PORT: '0', [name!]: value },
        encoding: 'utf8',
        timeout: 15_000,
      });
      expect(result.status).to.equal(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).to.have.length(1);
      expect(lines[0]).to.match(new RegExp(`^invalid configuration: ${name}: `));
    });
  }
});
