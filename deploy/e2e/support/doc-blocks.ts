import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './kube';

/**
 * The first fenced `sh` block after `heading` in a docs page, so that the suite runs the steps as
 * the page gives them to a reader, and a change to one is a change to the other.
 */
export function shBlockAfter(page: string, heading: string): string {
  const text = readFileSync(join(ROOT, 'docs', page), 'utf8');
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`docs/${page} has no heading "${heading}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at));
  if (block === null) throw new Error(`docs/${page}: no sh block after "${heading}"`);
  return block[1]!;
}

/** A block written for one overlay's namespace (staging's or production's), made `namespace`'s. */
export function forNamespace(block: string, namespace: string): string {
  return block.replace(/petstore-staging|(?<=-n )petstore(?![\w-])/g, namespace);
}
