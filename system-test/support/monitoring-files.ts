import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Rule, ruleGroups } from '../../scripts/generate-monitoring';

const MONITORING = join(__dirname, '..', '..', 'deploy', 'monitoring');
export const DASHBOARD_FILE = join(MONITORING, 'grafana-dashboard.json');

/** A label matcher of a PromQL selector. */
export interface Matcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
}

/** A PromQL series selector: a metric name and its label matchers. */
export interface Selector {
  readonly name: string;
  readonly matchers: readonly Matcher[];
}

/** Every rule of every rules file. */
export function rules(): Rule[] {
  return ruleGroups().flatMap((group) => group.rules);
}

/** The series the recording rules write. */
export function recordedNames(): Set<string> {
  return new Set(rules().flatMap((rule) => (rule.record === undefined ? [] : [rule.record])));
}

interface DashboardPanel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly gridPos: { readonly h: number; readonly w: number; readonly x: number; readonly y: number };
  readonly datasource?: { readonly uid: string };
  readonly targets?: ReadonlyArray<{ readonly expr: string; readonly datasource?: { readonly uid: string } }>;
}

export interface Dashboard {
  readonly uid: string;
  readonly panels: readonly DashboardPanel[];
  readonly templating: { readonly list: ReadonlyArray<{ readonly name: string; readonly type: string; readonly query: unknown }> };
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/**
 * Every PromQL expression of the dashboard: its panels' targets and the series its query variables
 * read (`label_values(<selector>, <label>)`).
 */
export function dashboardExpressions(board: Dashboard = dashboard()): string[] {
  const targets = board.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
  const variables = board.templating.list.flatMap((variable) => {
    if (variable.type !== 'query') return [];
    const query = (variable.query as { query: string }).query;
    return [/^label_values\((.*),\s*\w+\)$/.exec(query)?.[1] ?? query];
  });
  return [...targets, ...variables];
}

/** Words of PromQL that are neither metric names nor functions called with parentheses. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const MATCHER = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?/y;

/**
 * The series selectors of a PromQL expression (a reader for the expressions of this repository's
 * rules and dashboard, not a full PromQL parser): each identifier that is not a keyword, a function
 * called, or a label in a `by (…)`-style list, with the matchers in the braces after it. Grafana's
 * `$variables` may stand in matcher values and range durations.
 */
export function selectorsOf(expr: string): Selector[] {
  const selectors: Selector[] = [];
  let at = 0;
  const skipSpace = (): void => {
    while (at < expr.length && /\s/.test(expr[at]!)) at += 1;
  };
  while (at < expr.length) {
    const char = expr[at]!;
    if (char === '[') {
      at = expr.indexOf(']', at) + 1;
      continue;
    }
    if (char === '"') {
      at = expr.indexOf('"', at + 1) + 1;
      continue;
    }
    const word = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
    word.lastIndex = at;
    const found = /[0-9.]/.test(char) ? null : word.exec(expr);
    if (found === null) {
      at += 1;
      continue;
    }
    const name = found[0];
    at = word.lastIndex;
    skipSpace();
    if (LABEL_LISTS.has(name) && expr[at] === '(') {
      at = expr.indexOf(')', at) + 1;
    } else if (KEYWORDS.has(name) || expr[at] === '(' || /^(sum|min|max|avg|count|stddev|stdvar|topk|bottomk|quantile|count_values|group)$/.test(name)) {
      continue;
    } else {
      const matchers: Matcher[] = [];
      if (expr[at] === '{') {
        at += 1;
        for (;;) {
          MATCHER.lastIndex = at;
          const matcher = MATCHER.exec(expr);
          if (matcher === null) break;
          matchers.push({ label: matcher[1]!, op: matcher[2] as Matcher['op'], value: matcher[3]! });
          at = MATCHER.lastIndex;
        }
        skipSpace();
        if (expr[at] !== '}') throw new Error(`cannot read the matchers of ${name} at ${at} in: ${expr}`);
        at += 1;
      }
      selectors.push({ name, matchers });
    }
  }
  return selectors;
}
