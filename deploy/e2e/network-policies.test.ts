import { expect } from 'chai';
import { clusterOrPending, kubectl, pods, tryKubectl } from './support/kube';
import { deployed, OVERLAYS, type OverlayName } from './support/deployment';
import { probePod } from './support/probe-pod';

/** Whether a TCP connection from the probe pod to ip:port is established within 3 s. */
async function connects(namespace: string, pod: string, ip: string, port: number): Promise<boolean> {
  const ran = await tryKubectl(['-n', namespace, 'exec', pod, '--', 'timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${ip}/${port}`]);
  return ran.code === 0;
}

/** An HTTP/1.0 GET from the probe pod: the status line. */
async function httpStatusLine(namespace: string, pod: string, ip: string, port: number, path: string): Promise<string> {
  const script = `exec 3<>/dev/tcp/${ip}/${port}; printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n' >&3; head -n 1 <&3`;
  const ran = await tryKubectl(['-n', namespace, 'exec', pod, '--', 'timeout', '5', 'bash', '-c', script]);
  return ran.stdout.trim();
}

async function waitUntilConnects(namespace: string, pod: string, ip: string, port: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await connects(namespace, pod, ip, port))) {
    if (Date.now() > deadline) throw new Error(`${namespace}/${pod} never reached ${ip}:${port}`);
  }
}

describe('deploy/e2e: the NetworkPolicies admit exactly the intended clients', function () {
  this.timeout(600_000);

  before(function () {
    clusterOrPending(this);
  });

  for (const name of Object.keys(OVERLAYS) as OverlayName[]) {
    describe(name, () => {
      const namespace = OVERLAYS[name].namespace;
      const ingressNamespace = 'ingress-nginx';
      const targets: Record<string, { ip: string; ports: number[] }> = {};

      before(async () => {
        await deployed();
        await kubectl(['create', 'namespace', ingressNamespace, '--dry-run=client', '-o', 'yaml']).then((yaml) => kubectl(['apply', '-f', '-'], { input: yaml }));
        const probes = [
          probePod('outsider', namespace, {}),
          probePod('internal-client', namespace, { 'petstore.example.com/pet-service-client': 'true' }),
          probePod(`ingress-${name}`, ingressNamespace, { 'app.kubernetes.io/name': 'ingress-nginx' }),
          probePod(`elsewhere-${name}`, ingressNamespace, {}),
        ];
        await kubectl(['apply', '-f', '-'], { input: probes.map((p) => JSON.stringify(p)).join('\n') });
        await kubectl(['-n', namespace, 'wait', '--for=condition=Ready', 'pod/outsider', 'pod/internal-client', '--timeout=120s']);
        await kubectl(['-n', ingressNamespace, 'wait', '--for=condition=Ready', `pod/ingress-${name}`, `pod/elsewhere-${name}`, '--timeout=120s']);
        const first = async (app: string) => (await pods(namespace, `app.kubernetes.io/name=${app}`))[0]!.ip;
        targets.gateway = { ip: await first('gateway'), ports: [8080, 9090] };
        targets['pet-service'] = { ip: await first('pet-service'), ports: [50051, 9091] };
        targets.mongodb = { ip: await first('mongodb'), ports: [27017] };
        targets.redis = { ip: await first('redis'), ports: name === 'production' ? [6379, 26379] : [6379] };
      });

      after(async () => {
        await kubectl(['-n', namespace, 'delete', 'pod', 'outsider', 'internal-client', '--wait=false']);
        await kubectl(['-n', ingressNamespace, 'delete', 'pod', `ingress-${name}`, `elsewhere-${name}`, '--wait=false']);
      });

      it('the ingress controller reaches the gateway (HTTP 200 for the document), an internal client the pet service', async () => {
        await waitUntilConnects(ingressNamespace, `ingress-${name}`, targets.gateway!.ip, 8080);
        expect(await httpStatusLine(ingressNamespace, `ingress-${name}`, targets.gateway!.ip, 8080, '/v1/openapi.json')).to.match(/^HTTP\/1\.1 200 /);
        await waitUntilConnects(namespace, 'internal-client', targets['pet-service']!.ip, 50051);
      });

      it('the gateway reaches the pet service and Redis; the pet service reaches MongoDB', async () => {
        const gateway = (await pods(namespace, 'app.kubernetes.io/name=gateway'))[0]!.name;
        const petService = (await pods(namespace, 'app.kubernetes.io/name=pet-service'))[0]!.name;
        // As for the probe pods, a pod the autoscaler added just now may not be in the policy
        // controller's sets yet (kube-router refuses it meanwhile): each path is tried for up to 60 s,
        // and must then connect.
        const from = async (pod: string, ip: string, port: number) => {
          const script = `const s=require('net').connect(${port},'${ip}');s.on('connect',()=>process.exit(0));s.on('error',()=>process.exit(1));setTimeout(()=>process.exit(2),3000)`;
          const deadline = Date.now() + 60_000;
          for (;;) {
            const { code } = await tryKubectl(['-n', namespace, 'exec', pod, '--', 'node', '-e', script]);
            if (code === 0 || Date.now() > deadline) return code;
          }
        };
        expect(await from(gateway, targets['pet-service']!.ip, 50051), 'gateway -> pet service').to.equal(0);
        for (const port of targets.redis!.ports) expect(await from(gateway, targets.redis!.ip, port), `gateway -> redis:${port}`).to.equal(0);
        expect(await from(petService, targets.mongodb!.ip, 27017), 'pet service -> mongodb').to.equal(0);
      });

      it('a pod outside the allowed set reaches none of them; the internal client and the ingress only their own', async () => {
        // The allowed paths above prove the probe pods' addresses are in the policies' sets by now.
        await waitUntilConnects(namespace, 'internal-client', targets['pet-service']!.ip, 50051);
        const refused: string[] = [];
        const expectRefused = async (ns: string, pod: string, target: string, port: number) => {
          if (await connects(ns, pod, targets[target]!.ip, port)) refused.push(`${ns}/${pod} -> ${target}:${port} connected`);
        };
        for (const [target, { ports }] of Object.entries(targets)) {
          for (const port of ports) {
            await expectRefused(namespace, 'outsider', target, port);
            await expectRefused(ingressNamespace, `elsewhere-${name}`, target, port);
            if (!(target === 'pet-service' && port === 50051)) await expectRefused(namespace, 'internal-client', target, port);
            if (!(target === 'gateway' && port === 8080)) await expectRefused(ingressNamespace, `ingress-${name}`, target, port);
          }
        }
        expect(refused).to.deep.equal([]);
      });
    });
  }
});
