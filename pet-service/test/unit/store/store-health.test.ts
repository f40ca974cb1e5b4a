import { expect } from 'chai';
import { HealthImplementation } from 'grpc-health-check';
import pino from 'pino';
import { StoreHealthMonitor } from '../../../src/store/store-health';

describe('StoreHealthMonitor', () => {
  it('reports SERVING once the store answers, NOT_SERVING while it fails to, and SERVING once it does again', async () => {
    let reachable = true;
    const statuses: Array<[string, string]> = [];
    const health = { setStatus: (service: string, status: string) => statuses.push([service, status]) } as unknown as HealthImplementation;
    const monitor = new StoreHealthMonitor(
      { ping: () => (reachable ? Promise.resolve() : Promise.reject(new Error('down'))) },
      health,
      ['', 'petstore.v1.PetService'],
      pino({ level: 'silent' }),
    );
    expect(await monitor.probe()).to.equal(true);
    expect(statuses).to.deep.equal([
      ['', 'SERVING'],
      ['petstore.v1.PetService', 'SERVING'],
    ]);
    expect(await monitor.probe()).to.equal(true);
    expect(statuses).to.have.length(2);
    reachable = false;
    expect(await monitor.probe()).to.equal(false);
    expect(statuses.slice(2)).to.deep.equal([
      ['', 'NOT_SERVING'],
      ['petstore.v1.PetService', 'NOT_SERVING'],
    ]);
    reachable = true;
    expect(await monitor.probe()).to.equal(true);
    expect(statuses.slice(4)).to.deep.equal([
      ['', 'SERVING'],
      ['petstore.v1.PetService', 'SERVING'],
    ]);
  });

  it('does not report SERVING again after it was stopped for shutdown', async () => {
    const statuses: string[] = [];
    const health = { setStatus: (_service: string, status: string) => statuses.push(status) } as unknown as HealthImplementation;
    let reachable = false;
    const monitor = new StoreHealthMonitor(
      { ping: () => (reachable ? Promise.resolve() : Promise.reject(new Error('down'))) },
      health,
      [''],
      pino({ level: 'silent' }),
    );
    await monitor.probe();
    monitor.stop();
    reachable = true;
    await monitor.probe();
    expect(statuses).to.deep.equal(['NOT_SERVING']);
  });
});
