import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/**
 * Reads and parses a YAML (or JSON) file named by a setting. @throws Error with a one-line
 * message that starts `<source>:`, with the line and column of a syntax error.
 */
export function readYamlFile(path: string, source: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`${source}: ${(error as Error).message}`, { cause: error });
  }
  return parseYamlText(text, source);
}

/** {@link readYamlFile} for text already read. */
export function parseYamlText(text: string, source: string): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    // yaml appends a code frame to the first line ("... at line 3, column 1:"), which would
    // break the one-line startup message; the first line alone still says where.
    const firstLine = (error as Error).message.split('\n', 1)[0]!.replace(/:$/, '');
    throw new Error(`${source}: ${firstLine}`, { cause: error });
  }
}
