import type { RuleGroup } from '../../../scripts/generate-monitoring';
import { selectorsOf } from '../../../system-test/support/monitoring-files';

/** An OpenAPI document, the parts read here. */
export interface OperationsDocument {
  readonly servers: ReadonlyArray<{ readonly url: string }>;
  readonly paths: Readonly<Record<string, object>>;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * Every operation of `document` as the gateway's metrics label it, `METHOD route`: the server's
 * prefix, and `{petId}` written `:petId` as in express's route templates.
 */
export function documentedOperations(document: OperationsDocument): string[] {
  const prefix = document.servers[0]?.url ?? '';
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => HTTP_METHODS.has(method))
      .map((method) => `${method.toUpperCase()} ${prefix}${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
}

/** The latency table of docs/slo.md: each route's bound in milliseconds, by `METHOD route`. */
export function documentedLatencyBounds(markdown: string): Map<string, number> {
  return new Map([...markdown.matchAll(/^\| `([A-Z]+ \/\S+)` \| (\d+) ms \|/gm)].map(([, operation, ms]) => [operation!, Number(ms)]));
}

/**
 * What the latency SLO's recording rules miss (one per window in `windows`, as
 * `slo:sli_error:ratio_rate<window>`): each operation of `operations` judged in every window, at
 * the bound `bounds` (docs/slo.md) gives it, nothing else judged, and every judged operation
 * counted in its window's denominator. Empty when nothing is missing.
 */
export function latencyCoverageProblems(
  groups: readonly RuleGroup[],
  operations: readonly string[],
  bounds: ReadonlyMap<string, number>,
  windows: readonly string[],
): string[] {
  const problems: string[] = [];
  for (const operation of operations) if (!bounds.has(operation)) problems.push(`docs/slo.md: ${operation} has no bound`);
  for (const operation of bounds.keys()) if (!operations.includes(operation)) problems.push(`docs/slo.md: ${operation} is no operation of the API`);
  const latency = groups.flatMap((group) => group.rules.filter((rule) => rule.record !== undefined && rule.labels?.slo === 'latency'));
  for (const window of windows) {
    const record = `slo:sli_error:ratio_rate${window}`;
    const rule = latency.find((candidate) => candidate.record === record);
    if (rule === undefined) {
      problems.push(`${record}: no latency rule`);
      continue;
    }
    const selectors = selectorsOf(rule.expr);
    const judged = new Map<string, number>();
    for (const { matchers } of selectors.filter((selector) => selector.name === 'http_request_duration_seconds_bucket')) {
      const value = (label: string): string | undefined => matchers.find((matcher) => matcher.label === label && matcher.op === '=')?.value;
      judged.set(`${value('method')} ${value('route')}`, Number(value('le')) * 1000);
    }
    const counted = selectors.filter((selector) => selector.name === 'http_request_duration_seconds_count');
    const countedBy = (operation: string): boolean => {
      const [method, route] = operation.split(' ') as [string, string];
      const selects = (label: string, value: string) => (matcher: { label: string; op: string; value: string }) =>
        matcher.label !== label || (matcher.op === '=' ? matcher.value === value : matcher.op === '=~' ? new RegExp(`^(?:${matcher.value})$`).test(value) : true);
      return counted.some(({ matchers }) => matchers.every(selects('method', method)) && matchers.every(selects('route', route)));
    };
    for (const operation of operations) {
      const bound = judged.get(operation);
      if (bound === undefined) problems.push(`${record}: ${operation} not judged`);
      else if (bounds.has(operation) && bound !== bounds.get(operation)) problems.push(`${record}: ${operation} within ${bound} ms, docs/slo.md says ${bounds.get(operation)} ms`);
    }
    for (const operation of judged.keys()) {
      if (!operations.includes(operation)) problems.push(`${record}: ${operation} judged, but is no operation of the API`);
      if (!countedBy(operation)) problems.push(`${record}: ${operation} not counted in the denominator`);
    }
  }
  return problems;
}
