import { waitFor } from './wait-for';

/** How the endpoints follow readiness; the defaults suit a test on loopback. */
export interface EndpointsOptions {
  /** Pause between two polls of a gateway: endpoint propagation, far below any drain delay. Default 50 ms. */
  readonly pollMs?: number;
  /** Longest wait for one answer. Default 1000 ms. */
  readonly timeoutMs?: number;
  /**
   * Polls without an answer in time, in a row, before a gateway leaves (a loaded machine can be
   * slow to answer); an answer other than 200 takes it out at once. Default 3.
   */
  readonly failureThreshold?: number;
}

/** A Service's endpoints, played on loopback: the gateways whose `/readyz` answered 200 at the last poll. */
export interface Endpoints {
  /** Indexes of the gateways in the endpoints: ready at the last poll, and not taken out. */
  ready(): readonly number[];
  /** Takes a gateway out until {@link Endpoints.putBack}, as a preStop pause does. */
  takeOut(index: number): void;
  putBack(index: number): void;
  /** Resolves once a poll begun after now finds the gateway ready: never on a stale answer. */
  becameReady(index: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Polls `/readyz` of every admin port `adminPorts()` names (as many as it names at the start), each
 * gateway in a loop of its own, its polls numbered: one gateway's slow answer never holds back
 * another's, as a load balancer probes each endpoint apart. A gateway joins on a 200 and leaves on
 * any other answer, on a refused connection, or after `failureThreshold` polls in a row without an
 * answer.
 */
export function pollEndpoints(adminPorts: () => readonly number[], options: EndpointsOptions = {}): Endpoints {
  const { pollMs = 50, timeoutMs = 1000, failureThreshold = 3 } = options;
  /** Per gateway: the number of its last poll that found it ready; absent while it is not. */
  const readyInPoll = new Map<number, number>();
  /** Per gateway: how many polls have begun. */
  const polls = new Map<number, number>();
  const takenOut = new Set<number>();
  let polling = true;
  const poll = async (index: number): Promise<void> => {
    let silences = 0;
    while (polling) {
      const thisPoll = (polls.get(index) ?? 0) + 1;
      polls.set(index, thisPoll);
      const status = await fetch(`http://127.0.0.1:${adminPorts()[index]}/readyz`, { signal: AbortSignal.timeout(timeoutMs) }).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status;
        },
        (error: Error) => (error.name === 'TimeoutError' ? 'silent' : 'refused'),
      );
      silences = status === 'silent' ? silences + 1 : 0;
      if (status === 200) readyInPoll.set(index, thisPoll);
      else if (status !== 'silent' || silences >= failureThreshold) readyInPoll.delete(index);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  };
  const pollers = adminPorts().map((_, index) => poll(index));
  return {
    ready: () => [...readyInPoll.keys()].filter((index) => !takenOut.has(index)).sort((a, b) => a - b),
    takeOut: (index) => takenOut.add(index),
    putBack: (index) => takenOut.delete(index),
    becameReady(index, waitMs = 10_000) {
      const after = polls.get(index) ?? 0;
      return waitFor(() => (readyInPoll.get(index) ?? 0) > after, waitMs, () => `gateway ${index} not ready`);
    },
    async stop() {
      polling = false;
      await Promise.all(pollers);
    },
  };
}
