// The image references the GitHub workflows produce, read from .github/workflows: what the manifests'
// images are checked against (scripts/check-deploy.ts, scripts/check-deploy-kubernetes.ts).
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT, arr, at, obj } from './check-deploy-lib';

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
