/**
 * The licence policy of the services' production dependencies: every third-party component of a
 * CycloneDX SBOM must carry a licence on the allow-list (`.ci/allowed-licences.txt`). The
 * workspace's own packages (`@petstore/…`) are not checked.
 */

/** A component of a CycloneDX 1.5 SBOM, as far as the policy reads it. */
export interface SbomComponent {
  readonly name: string;
  readonly version?: string;
  readonly purl?: string;
  readonly licenses?: ReadonlyArray<{ readonly license?: { readonly id?: string; readonly name?: string }; readonly expression?: string }>;
}

/** The allow-list file's SPDX ids: one per line, `#` comments and blank lines ignored. */
export function parseAllowList(text: string): ReadonlySet<string> {
  return new Set(
    text
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter((line) => line !== ''),
  );
}

/** Whether an SPDX expression is allowed: OR needs one side, AND both; parentheses group. */
export function expressionAllowed(expression: string, allowed: ReadonlySet<string>): boolean {
  const tokens = expression.replace(/[()]/g, ' $& ').trim().split(/\s+/);
  let position = 0;
  const primary = (): boolean => {
    const token = tokens[position++];
    if (token === '(') {
      const value = or();
      position += 1;
      return value;
    }
    // `X WITH exception`: judged by X.
    if (tokens[position] === 'WITH') position += 2;
    return token !== undefined && allowed.has(token.replace(/\+$/, ''));
  };
  const and = (): boolean => {
    let value = primary();
    while (tokens[position] === 'AND') {
      position += 1;
      value = primary() && value;
    }
    return value;
  };
  const or = (): boolean => {
    let value = and();
    while (tokens[position] === 'OR') {
      position += 1;
      value = and() || value;
    }
    return value;
  };
  return or();
}

/** One line per third-party component whose licence is missing or not allowed. */
export function licenceProblems(components: readonly SbomComponent[], allowed: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const component of components) {
    if (component.purl?.startsWith('pkg:npm/%40petstore/')) continue;
    const id = `${component.name}@${component.version ?? '?'}`;
    const licences = (component.licenses ?? []).map((entry) => entry.expression ?? entry.license?.id ?? entry.license?.name ?? '');
    if (licences.length === 0) {
      problems.push(`${id}: no licence declared`);
      continue;
    }
    for (const licence of licences) {
      if (!expressionAllowed(licence, allowed)) problems.push(`${id}: ${licence} is not on .ci/allowed-licences.txt`);
    }
  }
  return problems;
}
