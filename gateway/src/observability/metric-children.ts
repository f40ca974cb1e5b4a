/**
 * A function of two keys whose value is made once per pair and kept: a metric's children (prom-client's
 * `labels(...)`) per combination of label values, so that counting a request builds no label object
 * and prom-client checks none. Looking a pair up allocates nothing; the pairs kept are the label
 * sets the metric holds anyway, which its labels bound.
 */
export function perPair<A, B, V>(make: (a: A, b: B) => V): (a: A, b: B) => V {
  const byFirst = new Map<A, Map<B, V>>();
  return (a, b) => {
    let bySecond = byFirst.get(a);
    if (bySecond === undefined) byFirst.set(a, (bySecond = new Map()));
    let value = bySecond.get(b);
    if (value === undefined) bySecond.set(b, (value = make(a, b)));
    return value;
  };
}

/** {@link perPair} for three keys. */
export function perTriple<A, B, C, V>(make: (a: A, b: B, c: C) => V): (a: A, b: B, c: C) => V {
  const byFirst = new Map<A, (b: B, c: C) => V>();
  return (a, b, c) => {
    let rest = byFirst.get(a);
    if (rest === undefined) byFirst.set(a, (rest = perPair((b2: B, c2: C) => make(a, b2, c2))));
    return rest(b, c);
  };
}
