import type { RuleGroup } from '../../../scripts/generate-monitoring';

/** A promtool unit-test file (`promtool test rules`), the parts read here. */
export interface RuleTestFile {
  readonly rule_files: readonly string[];
  readonly tests: ReadonlyArray<{
    readonly alert_rule_test?: ReadonlyArray<{
      readonly alertname: string;
      readonly exp_alerts?: ReadonlyArray<{ readonly exp_labels?: Readonly<Record<string, string>> }>;
    }>;
  }>;
}

/** The anchors GitHub gives a Markdown document's headings: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6} +(.+?) *#*$/gm)].map(([, heading]) =>
      heading!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

/**
 * What an on-call engineer would miss of each alert (by name and severity): a runbook section that
 * its `runbook_url` names in `runbook` (docs/runbooks.md), a unit test in which it fires, and one in
 * which it stays silent. Empty when nothing is missing.
 */
export function alertCoverageProblems(groups: readonly RuleGroup[], tests: readonly RuleTestFile[], runbook: string): string[] {
  const anchors = headingAnchors(runbook);
  const evaluations = tests.flatMap((file) => file.tests.flatMap((test) => test.alert_rule_test ?? []));
  return groups.flatMap((group) =>
    group.rules.flatMap((rule) => {
      if (rule.alert === undefined) return [];
      const severity = rule.labels?.severity;
      const name = `${rule.alert} (${severity ?? 'no severity'})`;
      const problems: string[] = [];
      if (severity !== 'page' && severity !== 'ticket') problems.push(`${name}: severity must be page or ticket`);
      const anchor = /^docs\/runbooks\.md#(.+)$/.exec(rule.annotations?.runbook_url ?? '')?.[1];
      if (anchor === undefined || !anchors.has(anchor)) problems.push(`${name}: runbook_url ${rule.annotations?.runbook_url ?? '(none)'} names no section of docs/runbooks.md`);
      const ofAlert = evaluations.filter((evaluation) => evaluation.alertname === rule.alert);
      const fires = (evaluation: (typeof ofAlert)[number]): boolean => (evaluation.exp_alerts ?? []).some((alert) => alert.exp_labels?.severity === severity);
      if (!ofAlert.some(fires)) problems.push(`${name}: no unit test in which it fires`);
      if (!ofAlert.some((evaluation) => !fires(evaluation))) problems.push(`${name}: no unit test in which it stays silent`);
      return problems;
    }),
  );
}
