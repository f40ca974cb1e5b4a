import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';

/** One instruction of a Dockerfile, continuation lines joined. */
export interface Instruction {
  readonly keyword: string;
  /** The text after the keyword. */
  readonly text: string;
  /** 1-based line of the keyword, for messages. */
  readonly line: number;
}

export interface Stage {
  readonly name: string | undefined;
  /** The image after ARG defaults are substituted. */
  readonly from: string;
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  readonly globalArgs: ReadonlyMap<string, string>;
  readonly stages: readonly Stage[];
}

/** A COPY or ADD: `--from` stage (undefined: the build context), sources, destination. */
export interface Copy {
  readonly from: string | undefined;
  readonly sources: readonly string[];
  readonly destination: string;
  readonly line: number;
}

/** Parses the subset of Dockerfile syntax the services' Dockerfiles use (no heredocs). */
export function parseDockerfile(text: string): Dockerfile {
  const instructions: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trimEnd();
    if (pending === undefined && (line.trim() === '' || line.trimStart().startsWith('#'))) return;
    if (pending !== undefined && line.trimStart().startsWith('#')) return;
    const continued = line.endsWith('\\');
    const part = continued ? line.slice(0, -1) : line;
    pending = pending === undefined ? { text: part.trim(), line: index + 1 } : { ...pending, text: `${pending.text} ${part.trim()}` };
    if (!continued) {
      const [keyword = '', ...rest] = pending.text.split(/\s+/);
      instructions.push({ keyword: keyword.toUpperCase(), text: rest.join(' '), line: pending.line });
      pending = undefined;
    }
  });

  const globalArgs = new Map<string, string>();
  const stages: { name: string | undefined; from: string; instructions: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const [image = '', as, name] = instruction.text.split(/\s+/);
      const from = image.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, arg: string) => globalArgs.get(arg) ?? '');
      stages.push({ name: as?.toUpperCase() === 'AS' ? name : undefined, from, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword === 'ARG') {
        const [name = '', value = ''] = instruction.text.split('=', 2);
        globalArgs.set(name.trim(), value.trim());
      }
    } else {
      stages[stages.length - 1]!.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

/** The COPY and ADD instructions of a stage. */
export function copies(stage: Stage): Copy[] {
  return stage.instructions
    .filter((instruction) => instruction.keyword === 'COPY' || instruction.keyword === 'ADD')
    .map((instruction) => {
      const words = instruction.text.startsWith('[') ? (JSON.parse(instruction.text) as string[]) : instruction.text.split(/\s+/);
      const flags = words.filter((word) => word.startsWith('--'));
      const paths = words.filter((word) => !word.startsWith('--'));
      const from = flags.find((flag) => flag.startsWith('--from='))?.slice('--from='.length);
      return { from, sources: paths.slice(0, -1), destination: paths[paths.length - 1] ?? '', line: instruction.line };
    });
}

/** The exec-form ENTRYPOINT (or CMD) of a stage as words; undefined for the shell form or none. */
export function entrypoint(stage: Stage): string[] | undefined {
  const last = stage.instructions.filter((instruction) => instruction.keyword === 'ENTRYPOINT' || instruction.keyword === 'CMD').at(-1);
  if (last === undefined || !last.text.startsWith('[')) return undefined;
  return JSON.parse(last.text) as string[];
}

/** The stage's working directory after its last WORKDIR (absolute paths only). */
export function workdir(stage: Stage): string {
  return stage.instructions.filter((instruction) => instruction.keyword === 'WORKDIR').reduce((dir, instruction) => posix.resolve(dir, instruction.text), '/');
}

/**
 * .dockerignore semantics: a path is excluded when the last pattern that matches it, or one of
 * its parent directories, is not a `!` exception.
 */
export function dockerIgnore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const include = line.startsWith('!');
      const pattern = posix.normalize((include ? line.slice(1) : line).trim()).replace(/^\/+|\/+$/g, '');
      return { include, pattern: globToRegExp(pattern) };
    });
  return (path) => {
    const parts = posix.normalize(path).replace(/\/+$/, '').split('/');
    let excluded = false;
    for (const rule of rules) {
      for (let length = 1; length <= parts.length; length++) {
        if (rule.pattern.test(parts.slice(0, length).join('/'))) {
          excluded = !rule.include;
          break;
        }
      }
    }
    return excluded;
  };
}

function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '*' && pattern[i + 1] === '*') {
      // `**/` matches any number of directories, including none.
      source += pattern[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += pattern[i + 2] === '/' ? 2 : 1;
    } else if (char === '*') {
      source += '[^/]*';
    } else if (char === '?') {
      source += '[^/]';
    } else {
      source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

/** What a service's image must be, for {@link checkDockerfile}. */
export interface ImageExpectations {
  /** Repository root: the build context. */
  readonly root: string;
  readonly dockerignore: (path: string) => boolean;
  /** The bundle the image runs, as a build output path without `.js` (scripts/build-entries.ts). */
  readonly entry: string;
  /** Every bundle `npm run build` writes. */
  readonly buildOutputs: readonly string[];
  /** The ports the service listens on by default (config.ts). */
  readonly ports: readonly number[];
  /** The production heap ceiling in MB (README, Production build). */
  readonly maxOldSpaceMb: number;
  /** The Node version the project pins (package.json's `node` devDependency): the one its tests run on. */
  readonly nodeVersion: string;
}

/** What the node base images install besides node: npm and npx (with corepack, where bundled). */
const PACKAGE_MANAGER_PATHS = ['/usr/local/lib/node_modules', '/usr/local/bin/npm', '/usr/local/bin/npx'];
const NODE_SLIM = /^node:((\d+)\.\d+\.\d+)-(bookworm|bullseye|trixie)-slim(@sha256:[0-9a-f]{64})?$/;
const SECRET_NAME = /SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE/i;

/** Every way the Dockerfile breaks the image rules, as messages; empty when it keeps them all. */
export function checkDockerfile(text: string, expected: ImageExpectations): string[] {
  const problems: string[] = [];
  const { stages } = parseDockerfile(text);
  const final = stages.at(-1);
  if (final === undefined || stages.length < 2) return ['needs a build stage and a runtime stage'];
  const build = stages.slice(0, -1);

  for (const stage of stages) {
    const match = NODE_SLIM.exec(stage.from);
    if (match === null) problems.push(`FROM ${stage.from}: not a pinned node:<x.y.z>-<debian>-slim image`);
    else if (Number(match[2]) % 2 !== 0) problems.push(`FROM ${stage.from}: Node ${match[2]} is not an LTS line`);
    else if (match[1] !== expected.nodeVersion) problems.push(`FROM ${stage.from}: not the Node the tests run on (${expected.nodeVersion}, package.json)`);
  }

  for (const stage of stages) {
    for (const copy of copies(stage)) {
      if (copy.from !== undefined) continue;
      for (const source of copy.sources) {
        const path = source.replace(/^\.\//, '').replace(/\/+$/, '');
        if (!existsSync(join(expected.root, path))) problems.push(`line ${copy.line}: COPY ${source}: not in the repository`);
        else if (expected.dockerignore(path)) problems.push(`line ${copy.line}: COPY ${source}: excluded by .dockerignore`);
      }
    }
  }

  const installs = (stage: Stage) => stage.instructions.some((i) => i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.text));
  if (!build.some(installs)) problems.push('no build stage runs npm ci');
  if (installs(final)) problems.push('the runtime stage installs packages; only the build stage may');
  const removal = (instruction: Instruction) => instruction.keyword === 'RUN' && /^rm -rf( \S+)+$/.test(instruction.text);
  for (const instruction of final.instructions) {
    if (removal(instruction)) continue;
    if (/\b(npm|npx|tsx)\b/.test(instruction.text) && ['RUN', 'CMD', 'ENTRYPOINT'].includes(instruction.keyword)) {
      problems.push(`line ${instruction.line}: the runtime stage runs ${instruction.keyword} ${instruction.text}`);
    }
  }
  const removed = final.instructions.filter(removal).flatMap((instruction) => instruction.text.split(/\s+/).slice(2));
  for (const path of PACKAGE_MANAGER_PATHS) {
    if (!removed.includes(path)) problems.push(`the runtime stage keeps ${path}: the base's package manager must not reach the running image`);
  }
  if (!build.some((stage) => stage.instructions.some((i) => i.keyword === 'RUN' && /\bnpm run build\b/.test(i.text)))) {
    problems.push('no build stage runs npm run build');
  }

  const generated = build.flatMap(copies).some((copy) => copy.from === undefined && copy.sources.some((s) => /^(\.\/)?proto\/?$/.test(s)));
  if (!generated) problems.push('the build stage does not copy proto/ (the generated code and the .proto files)');

  const user = final.instructions.filter((i) => i.keyword === 'USER').at(-1)?.text;
  if (user === undefined) problems.push('the runtime stage has no USER: it would run as root');
  else if (!/^[1-9][0-9]*(:[0-9]+)?$/.test(user)) problems.push(`USER ${user}: must be a numeric non-root uid, so runAsNonRoot can verify it`);

  for (const instruction of final.instructions.concat(...build.map((stage) => stage.instructions))) {
    if ((instruction.keyword === 'ENV' || instruction.keyword === 'ARG') && SECRET_NAME.test(instruction.text.split(/[=\s]/)[0] ?? '')) {
      problems.push(`line ${instruction.line}: ${instruction.keyword} ${instruction.text}: a secret baked into the image`);
    }
  }

  const exposed = final.instructions
    .filter((i) => i.keyword === 'EXPOSE')
    .flatMap((i) => i.text.split(/\s+/))
    .map((port) => Number(port.split('/')[0]));
  const wanted = [...expected.ports].sort();
  if (JSON.stringify([...exposed].sort()) !== JSON.stringify(wanted)) {
    problems.push(`EXPOSE ${exposed.join(' ')}: the service listens on ${wanted.join(' ')}`);
  }

  const command = entrypoint(final);
  if (command === undefined) {
    problems.push('the runtime stage needs an exec-form ENTRYPOINT');
  } else {
    if (command[0] !== 'node') problems.push(`ENTRYPOINT starts ${command[0]}, not node`);
    const script = command.find((word) => word.endsWith('.js'));
    const dir = workdir(final);
    if (script === undefined) {
      problems.push('ENTRYPOINT runs no .js file');
    } else {
      const relative = posix.relative('/app', posix.resolve(dir, script));
      if (!expected.buildOutputs.includes(relative.replace(/\.js$/, ''))) problems.push(`ENTRYPOINT ${script}: not a file npm run build produces`);
      else if (relative !== `${expected.entry}.js`) problems.push(`ENTRYPOINT ${script}: not this service's ${expected.entry}.js`);
      const absolute = posix.resolve(dir, script);
      const buildDir = posix.dirname(`/app/${expected.entry}`);
      const copied = copies(final).some(
        (copy) =>
          copy.from !== undefined &&
          copy.sources.some((source) => posix.resolve(workdir(stageNamed(stages, copy.from!)), source) === buildDir) &&
          absolute.startsWith(`${posix.resolve(dir, copy.destination)}/`),
      );
      if (!copied) problems.push(`ENTRYPOINT ${script}: the runtime stage does not copy it from the build stage's ${buildDir}`);
    }
    const oldSpace = command.find((word) => word.startsWith('--max-old-space-size='));
    if (oldSpace !== `--max-old-space-size=${expected.maxOldSpaceMb}`) {
      problems.push(`ENTRYPOINT: needs --max-old-space-size=${expected.maxOldSpaceMb}, has ${oldSpace ?? 'none'}`);
    }
    if (!command.some((word) => word.startsWith('--max-semi-space-size='))) problems.push('ENTRYPOINT: no --max-semi-space-size');
  }
  return problems;
}

function stageNamed(stages: readonly Stage[], name: string): Stage {
  const stage = stages.find((candidate) => candidate.name === name);
  if (stage === undefined) throw new Error(`no stage ${name}`);
  return stage;
}

/** The heap flags of an exec-form node command, in MB; semi-space defaults to V8's 16 MB. */
export function heapFlags(command: readonly string[]): { oldSpaceMb: number; semiSpaceMb: number } | undefined {
  const value = (flag: string) => command.find((word) => word.startsWith(`${flag}=`))?.split('=')[1];
  const oldSpace = value('--max-old-space-size');
  if (oldSpace === undefined) return undefined;
  return { oldSpaceMb: Number(oldSpace), semiSpaceMb: Number(value('--max-semi-space-size') ?? 16) };
}
