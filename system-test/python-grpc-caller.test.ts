import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROTO_ROOT } from '@petstore/proto';
import { expect } from 'chai';
import { startTestStack, type TestStack } from './support/test-stack';

const run = promisify(execFile);
/** grpcio and grpcio-tools, pinned: the stubs are generated from the .proto by this release's protoc. */
const GRPCIO_VERSION = '1.85.1';
const VENV = process.env.PYTHON_GRPC_VENV ?? join(tmpdir(), `petstore-python-grpc-${GRPCIO_VERSION}`);
const PYTHON = join(VENV, 'bin', 'python');

/**
 * An internal caller in another language, from the .proto alone (issue 47): Python stubs made by
 * grpcio-tools, calling a real pet service to create, update (with and without a mask, with a
 * stale etag, a refused transition) and delete a pet, reading the google.rpc details as any gRPC
 * client does. Needs python3 with venv and the package index (PyPI) for the first run; pending,
 * with the reason, where they are missing, unless REQUIRE_PYTHON=1 (as in CI).
 */
describe('a Python gRPC caller generated from the .proto', function () {
  this.timeout(300_000);
  let stack: TestStack;
  let out: string;

  before(async function () {
    try {
      if (!existsSync(PYTHON)) await run('python3', ['-m', 'venv', VENV]);
      await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', `grpcio==${GRPCIO_VERSION}`, `grpcio-tools==${GRPCIO_VERSION}`]);
    } catch (error) {
      if (process.env.REQUIRE_PYTHON === '1') throw error;
      console.log(`      pending: no python3 venv with grpcio ${GRPCIO_VERSION} (${(error as Error).message.split('\n')[0]})`);
      this.skip();
    }
    stack = await startTestStack();
    out = mkdtempSync(join(tmpdir(), 'petstore-python-stubs-'));
  });

  after(async () => {
    await stack?.close();
    if (out !== undefined) rmSync(out, { recursive: true, force: true });
  });

  it('creates, reserves, renames, sells and deletes a pet; reads ABORTED with the current etag and FAILED_PRECONDITION with its details', async () => {
    const script = join(__dirname, 'support', 'python_grpc_caller.py');
    const { stdout } = await run(PYTHON, [script, PROTO_ROOT, out, `127.0.0.1:${stack.petService.port}`]);
    const seen = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
    expect(seen.created).to.deep.include({ etag: '"0"' });
    expect(seen.reserved).to.deep.equal({ status: 'PET_STATUS_PENDING', etag: '"1"' });
    expect(seen.stale).to.deep.equal({
      code: 'ABORTED',
      message: 'etag: the pet has changed; its etag is now "1"',
      ErrorInfo: { reason: 'ETAG_MISMATCH', etag: '"1"' },
    });
    expect(seen.renamed).to.deep.equal({ name: 'Py II', status: 'PET_STATUS_PENDING', etag: '"2"' });
    expect(seen.sold).to.deep.equal({ status: 'PET_STATUS_SOLD', etag: '"3"' });
    expect(seen.refused).to.deep.equal({
      code: 'FAILED_PRECONDITION',
      message: 'status: cannot change from sold to available; sold is final',
      PreconditionFailure: [{ type: 'STATUS_TRANSITION', subject: 'sold -> available' }],
    });
    expect(seen.gone).to.deep.include({ code: 'NOT_FOUND' });
  });
});
