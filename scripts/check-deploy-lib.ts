// What the deployment checks share: YAML navigation, the services and what their config schema reads, and
// the image tags the workflows produce (scripts/check-deploy.ts, scripts/check-deploy-kubernetes.ts).
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { MarketIntelEnv } from '../services/market-intel/src/config';
import { RunnerEnv } from '../services/pipeline-runner/src/config';
import { SignalFeedbackEnv } from '../services/signal-feedback/src/config';
import { SkillRouterEnv } from '../services/skill-router/src/config';

/** The repository root. */
export const ROOT = path.resolve(__dirname, '..');
/** The four deployable services. */
export const SERVICES = ['market-intel', 'pipeline-runner', 'signal-feedback', 'skill-router'] as const;
/** One of {@link SERVICES}. */
export type ServiceName = (typeof SERVICES)[number];
/** Services with a PostgreSQL database and Prisma migrations. */
export const DB_SERVICES: readonly ServiceName[] = ['market-intel', 'signal-feedback', 'skill-router'];
/** Every image the images workflow builds (the services, the local ledger, the migrations). */
export const IMAGES = [...SERVICES, 'solana-localnet', 'migrate'] as const;

/** Collects problems as `where: message` lines; the checks report into one. */
export class Problems {
  /** The problems found so far, in the order found. */
  readonly list: string[] = [];
  /** Records one problem. */
  add(where: string, message: string): void {
    this.list.push(`${where}: ${message}`);
  }
}

/** A plain object of a parsed YAML/JSON document. */
export type Obj = Record<string, unknown>;
/** `value` when it is a plain object, else undefined. */
export function obj(value: unknown): Obj | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
}
/** `value` when it is an array, else an empty one. */
export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
/** Follows object keys and array indexes; undefined as soon as one is missing. */
export function at(value: unknown, ...keys: (string | number)[]): unknown {
  let current = value;
  for (const key of keys) {
    if (typeof key === 'number') current = arr(current)[key];
    else current = obj(current)?.[key];
  }
  return current;
}

/** Reads a file of the repository (path relative to {@link ROOT}) as UTF-8. */
export function read(rel: string): string {
  return fs.readFileSync(path.join(ROOT, rel), 'utf8');
}

/** Every document of a multi-document YAML text that is an object; YAML errors become problems. */
export function yamlDocuments(where: string, text: string, problems: Problems): Obj[] {
  const docs: Obj[] = [];
  for (const doc of parseAllDocuments(text, { merge: true })) {
    if (doc.errors.length > 0) problems.add(where, `YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = obj(doc.toJS());
    if (value) docs.push(value);
  }
  return docs;
}

/** Each service's zod schema of its environment (its config.ts): the variables it reads, with their defaults. */
const CONFIG_SCHEMAS: Record<
  ServiceName,
  { shape: Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }> }
> = {
  'market-intel': MarketIntelEnv,
  'pipeline-runner': RunnerEnv,
  'signal-feedback': SignalFeedbackEnv,
  'skill-router': SkillRouterEnv,
};

/** The default of a service's `PORT`, read from its schema (undefined when it has none). */
function configPort(service: ServiceName): number | undefined {
  const port = CONFIG_SCHEMAS[service].shape.PORT?.safeParse(undefined);
  return port?.success && typeof port.data === 'number' ? port.data : undefined;
}

/** Variable names each service reads, by service. */
export const KEYS = Object.fromEntries(
  SERVICES.map((s) => [s, new Set(Object.keys(CONFIG_SCHEMAS[s].shape))]),
) as Record<ServiceName, Set<string>>;
/** Each service's HTTP port, by service. */
export const PORTS = Object.fromEntries(SERVICES.map((s) => [s, configPort(s)])) as Record<
  ServiceName,
  number | undefined
>;

/** Reports every name of `names` that `allowed` lacks: a variable the service would never read. */
export function checkNames(
  problems: Problems,
  where: string,
  names: Iterable<string>,
  allowed: Set<string>,
): void {
  for (const name of names)
    if (!allowed.has(name)) problems.add(where, `sets ${name}, which the service does not read`);
}

/**
 * The image references the workflows produce, to check the manifests' images against:
 * `registry` — images pushed by the images workflow, as a repository pattern (the owner a wildcard)
 * and the tag patterns of its `docker/metadata-action` rules; `local` — `agent-services/<name>:<tag>`
 * references a workflow builds without pushing (the cluster end-to-end job loads them into kind).
 */
export interface WorkflowImages {
  /** Matches a pushed repository, capturing the image name (`ghcr.io/<owner>/agent-services/<name>`). */
  repository: RegExp | undefined;
  /** Tag patterns of the metadata rules, each with the rule it came from (for messages). */
  tags: { rule: string; pattern: RegExp }[];
  /** `agent-services/<name>:<tag>` references some workflow builds locally. */
  local: Set<string>;
}

/** A metadata-action tag rule (`type=semver,pattern={{version}}`) as the tags it can produce. */
function tagPattern(rule: string, branches: string[]): RegExp | undefined {
  const fields = Object.fromEntries(
    rule.split(',').map((part) => {
      const [key, ...value] = part.split('=');
      return [key?.trim() ?? '', value.join('=').trim()];
    }),
  );
  const semver = String.raw`(0|[1-9]\d*)`;
  switch (fields.type) {
    case 'semver':
      if (fields.pattern === '{{version}}') return new RegExp(`^${semver}\\.${semver}\\.${semver}$`);
      if (fields.pattern === '{{major}}.{{minor}}') return new RegExp(`^${semver}\\.${semver}$`);
      if (fields.pattern === '{{major}}') return new RegExp(`^${semver}$`);
      return undefined;
    case 'sha':
      return /^sha-[0-9a-f]{7}$/;
    case 'ref':
      if (fields.event === 'branch')
        return new RegExp(`^(${branches.map((b) => b.replace(/\W/g, '-')).join('|')})$`);
      if (fields.event === 'pr') return /^pr-\d+$/;
      if (fields.event === 'tag') return /^v\d+\.\d+\.\d+$/;
      return undefined;
    default:
      return undefined;
  }
}

/**
 * Reads what the workflows under `.github/workflows` produce: the images workflow's pushed
 * repository and tag rules, and every `agent-services/<name>:<tag>` a workflow tags a build with
 * (a `${{ matrix.<key> }}` name expands to that matrix's values).
 */
export function workflowImages(): WorkflowImages {
  const dir = path.join(ROOT, '.github', 'workflows');
  const result: WorkflowImages = { repository: undefined, tags: [], local: new Set() };
  for (const file of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const workflow = obj(parseYaml(text));
    const branches = arr(at(workflow, 'on', 'push', 'branches')).map(String);
    for (const job of Object.values(obj(workflow?.jobs) ?? {})) {
      const matrixValues = (key: string): string[] => {
        const values = arr(at(job, 'strategy', 'matrix', key)).map(String);
        const included = arr(at(job, 'strategy', 'matrix', 'include')).map((i) => at(i, key));
        return [...values, ...included.filter((v): v is string => typeof v === 'string')];
      };
      const expand = (reference: string): string[] => {
        const match = /\$\{\{\s*matrix\.(\w+)\s*\}\}/.exec(reference);
        if (!match?.[1]) return [reference];
        return matrixValues(match[1]).map((v) => reference.replace(match[0], v));
      };
      for (const step of arr(at(job, 'steps'))) {
        const uses = String(at(step, 'uses') ?? '');
        if (uses.startsWith('docker/metadata-action@')) {
          const images = String(at(step, 'with', 'images') ?? '').trim();
          const image = /^ghcr\.io\/[^/]+\/agent-services\/\$\{\{\s*matrix\.\w+\s*\}\}$/.test(images)
            ? images
            : undefined;
          if (image) result.repository = /^ghcr\.io\/([a-z0-9][a-z0-9-]*)\/agent-services\/([a-z0-9-]+)$/;
          for (const rule of String(at(step, 'with', 'tags') ?? '').split('\n')) {
            const pattern = tagPattern(rule.trim(), branches);
            if (pattern) result.tags.push({ rule: rule.trim(), pattern });
          }
        }
        const tags = at(step, 'with', 'tags');
        for (const tag of typeof tags === 'string' ? tags.split(/[\n,]/) : []) {
          for (const reference of expand(tag.trim())) {
            if (/^agent-services\/[a-z0-9-]+:[\w.-]+$/.test(reference)) result.local.add(reference);
          }
        }
      }
    }
  }
  return result;
}
