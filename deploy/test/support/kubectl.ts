import { execFileSync } from 'node:child_process';
import type { Context } from 'mocha';
import { parseAllDocuments } from 'yaml';
import { findExecutable, pendingOrRequired } from '../../../system-test/support/executables';

/** A rendered Kubernetes object; only the fields every object has are typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** `KUBECTL_BIN` if set, else `kubectl` on PATH or at Debian's path; undefined when none exists. */
export function findKubectl(): string | undefined {
  return findExecutable('KUBECTL_BIN', 'kubectl', '/usr/bin/kubectl');
}

/**
 * kubectl for a suite, or marks the suite pending when it is missing, with the reason on stderr.
 * With REQUIRE_KUBECTL=1 (CI) a missing kubectl fails instead.
 */
export function kubectlOrSkip(context: Context): string {
  return findKubectl() ?? pendingOrRequired(context, 'REQUIRE_KUBECTL', 'kubectl not found (install it, e.g. with .ci/install-kubectl.sh, or set KUBECTL_BIN)');
}

/** `kubectl kustomize <dir>`, parsed: every object the overlay renders. Needs no cluster. */
export function render(kubectl: string, dir: string): KubeObject[] {
  const output = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(output).map((document) => {
    if (document.errors.length > 0) throw document.errors[0]!;
    return document.toJS() as KubeObject;
  });
}
