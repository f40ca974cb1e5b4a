/**
 * The samples of metric `name` that carry the one label `label`, by that label's value, from a
 * Prometheus text exposition (a service's `/metrics`): e.g. the pet service's handshake refusals
 * by reason. Series with other labels as well are not matched.
 */
export function valuesByLabel(exposition: string, name: string, label: string): Record<string, number> {
  const values: Record<string, number> = {};
  for (const [, value, sample] of exposition.matchAll(new RegExp(`^${name}\\{${label}="([^"]*)"\\} (\\S+)$`, 'gm'))) values[value!] = Number(sample);
  return values;
}
