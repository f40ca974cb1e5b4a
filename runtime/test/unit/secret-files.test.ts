import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ConfigError, resolveSecretFiles, withFileVariants } from '../../index';

describe('secrets from files (<NAME>_FILE)', () => {
  let dir: string;
  const write = (name: string, content: string): string => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'secret-files-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('replaces each variable given as a file with the file’s content, dropping one trailing line break only', () => {
    const env = {
      ADMIN_TOKEN_FILE: write('token', 'a-token-of-sixteen-chars\n'),
      REDIS_PASSWORD_FILE: write('password', '  spaced and\r\n'),
      PAGE_TOKEN_SECRET_FILE: write('secret', 'two lines\n\n'),
      OTHER: 'kept',
    };
    const resolved = resolveSecretFiles(env, ['ADMIN_TOKEN', 'REDIS_PASSWORD', 'PAGE_TOKEN_SECRET', 'MONGODB_URI']);
    expect(resolved).to.deep.equal({
      ...env,
      ADMIN_TOKEN: 'a-token-of-sixteen-chars',
      REDIS_PASSWORD: '  spaced and',
      PAGE_TOKEN_SECRET: 'two lines\n',
    });
    expect(env, 'the environment given is not changed').to.not.have.property('ADMIN_TOKEN');
  });

  it('refuses both the variable and its file, naming both; an unreadable or empty file, naming the variable and the path', () => {
    const refusal = (env: NodeJS.ProcessEnv): string => {
      try {
        resolveSecretFiles(env, ['ADMIN_TOKEN']);
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    const file = write('token', 'x'.repeat(20));
    expect(refusal({ ADMIN_TOKEN: 'y'.repeat(20), ADMIN_TOKEN_FILE: file })).to.equal(
      'invalid configuration: ADMIN_TOKEN and ADMIN_TOKEN_FILE: set only one (the value, or the file that holds it)',
    );
    expect(refusal({ ADMIN_TOKEN: '', ADMIN_TOKEN_FILE: file }), 'set, though empty').to.match(/^invalid configuration: ADMIN_TOKEN and ADMIN_TOKEN_FILE: /);
    expect(refusal({ ADMIN_TOKEN_FILE: join(dir, 'missing') })).to.equal(`invalid configuration: ADMIN_TOKEN_FILE: cannot read ${join(dir, 'missing')}: ENOENT`);
    expect(refusal({ ADMIN_TOKEN_FILE: dir })).to.equal(`invalid configuration: ADMIN_TOKEN_FILE: cannot read ${dir}: EISDIR`);
    expect(refusal({ ADMIN_TOKEN_FILE: write('empty', '\n') })).to.match(/^invalid configuration: ADMIN_TOKEN_FILE: .*empty is empty$/);
  });

  it('ignores an empty _FILE variable, and names the _FILE twins of a list', () => {
    expect(resolveSecretFiles({ ADMIN_TOKEN_FILE: '' }, ['ADMIN_TOKEN'])).to.deep.equal({ ADMIN_TOKEN_FILE: '' });
    expect(withFileVariants(['MONGODB_URI', 'PAGE_TOKEN_SECRET'])).to.deep.equal(['MONGODB_URI_FILE', 'PAGE_TOKEN_SECRET_FILE']);
  });
});
