import { readFileSync } from 'node:fs';
import { ConfigError } from './env';

/** The suffix of a variable that names the file holding another's value (`ADMIN_TOKEN_FILE`). */
export const FILE_SUFFIX = '_FILE';

/** `names` with their `_FILE` twins, for a service's list of the variables it reads. */
export function withFileVariants(names: readonly string[]): string[] {
  return names.map((name) => `${name}${FILE_SUFFIX}`);
}

/**
 * The environment with each secret of `names` that is given as a file (`<NAME>_FILE`, the Docker
 * and Kubernetes convention) replaced by that file's content, so that a Secret mounted as a file
 * never appears in the pod spec, `kubectl describe pod` or `/proc/<pid>/environ`. One trailing
 * line break is dropped (`echo secret > file` writes one); nothing else is trimmed. The `_FILE`
 * variables stay; everything else is copied as it is. Read once, at start-up, like the variables.
 *
 * @throws ConfigError naming both variables when both are set (which one wins would be a guess),
 * or naming `<NAME>_FILE` and the path when the file cannot be read or is empty.
 */
export function resolveSecretFiles(
  env: NodeJS.ProcessEnv,
  names: readonly string[],
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): NodeJS.ProcessEnv {
  const resolved: NodeJS.ProcessEnv = { ...env };
  for (const name of names) {
    const fileVariable = `${name}${FILE_SUFFIX}`;
    const path = env[fileVariable];
    if (path === undefined || path === '') continue;
    if (env[name] !== undefined) throw new ConfigError(`${name} and ${fileVariable}: set only one (the value, or the file that holds it)`);
    let content: string;
    try {
      content = readFile(path);
    } catch (error) {
      throw new ConfigError(`${fileVariable}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    content = content.replace(/\r?\n$/, '');
    if (content === '') throw new ConfigError(`${fileVariable}: ${path} is empty`);
    resolved[name] = content;
  }
  return resolved;
}
