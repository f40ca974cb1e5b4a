import { expect } from 'chai';
import { isLoopback } from '../../../src/admin/admin-app';

// Without ADMIN_TOKEN the admin routes answer loopback peers only (kubectl port-forward, a sidecar).
describe('isLoopback', () => {
  it('accepts IPv4 127/8, ::1 and IPv4-mapped 127/8', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(address), address).to.equal(true);
  });

  it('refuses every other address, and none', () => {
    for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', 'fe80::1', '128.0.0.1', '127.example', undefined]) {
      expect(isLoopback(address), String(address)).to.equal(false);
    }
  });
});
