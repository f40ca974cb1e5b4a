/**
 * `npm run generate:monitoring`: writes the Prometheus Operator's copy of the alert and recording
 * rules (deploy/monitoring/prometheus-operator/prometheus-rule.yaml) from the plain rules files
 * (deploy/monitoring/rules/), so the two cannot drift; a test compares them.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

const MONITORING = join(__dirname, '..', 'deploy', 'monitoring');
export const RULES_DIR = join(MONITORING, 'rules');
export const PROMETHEUS_RULE_FILE = join(MONITORING, 'prometheus-operator', 'prometheus-rule.yaml');

/** A rule as the rules files hold it: a recording rule (`record`) or an alert (`alert`). */
export interface Rule {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly Rule[];
}

/** The rules files, in name order: the files Prometheus loads. */
export function ruleFiles(): string[] {
  return readdirSync(RULES_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => join(RULES_DIR, name));
}

/** Every group of every rules file, in file order. */
export function ruleGroups(): RuleGroup[] {
  return ruleFiles().flatMap((file) => (parse(readFileSync(file, 'utf8')) as { groups: RuleGroup[] }).groups);
}

/** The PrometheusRule holding {@link ruleGroups}, as YAML. */
export function renderPrometheusRule(): string {
  const rule = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'petstore' }, spec: { groups: ruleGroups() } };
  return `# Generated from ../rules/*.yaml by \`npm run generate:monitoring\`: edit those, not this file.\n${stringify(rule, { lineWidth: 0 })}`;
}

if (require.main === module) writeFileSync(PROMETHEUS_RULE_FILE, renderPrometheusRule());
