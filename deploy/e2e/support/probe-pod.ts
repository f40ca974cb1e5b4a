/**
 * A pod that only waits, from which a test tries connections, in the image `image` (by default the
 * Redis stand-in's: Debian's bash and coreutils, for /dev/tcp), optionally with a Secret mounted.
 * Restricted-profile compliant, so it may run in the overlays' namespaces.
 */
export function probePod(
  name: string,
  namespace: string,
  labels: Record<string, string>,
  options: { image?: string; secret?: { name: string; mountPath: string } } = {},
): object {
  const { image = 'redis:7.4.5-bookworm', secret } = options;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'probe',
          image,
          command: ['sleep', 'infinity'],
          ...(secret === undefined ? {} : { volumeMounts: [{ name: 'secret', mountPath: secret.mountPath, readOnly: true }] }),
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        },
      ],
      ...(secret === undefined ? {} : { volumes: [{ name: 'secret', secret: { secretName: secret.name } }] }),
    },
  };
}
