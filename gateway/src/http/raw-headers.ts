/**
 * How many times a header field was sent. Node keeps only the first of a repeated `Host` or
 * `Authorization` (and joins most others), so only `rawHeaders` tells one field from two.
 *
 * @param name lower case
 */
export function fieldCount(rawHeaders: readonly string[], name: string): number {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const field = rawHeaders[index]!;
    if (field.length === name.length && field.toLowerCase() === name) count += 1;
  }
  return count;
}
