// Rendering and schema validation for the deployment checks: finds a kustomize renderer, renders
// infra/base, the overlays and the add-on components, and validates every rendered object against
// the Kubernetes API schemas and the operators' CRD schemas. scripts/check-deploy-kubernetes.ts checks
// what docs/deploying.md, "Deploying" promises of the rendered objects.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Problems, ROOT, at, yamlDocuments, type Obj } from './check-deploy-lib';

/** Where to get a kustomize renderer when neither kubectl nor kustomize is on the PATH. */
export const KUSTOMIZE_HINT =
  'install kubectl (https://kubernetes.io/docs/tasks/tools/, kustomize is built in) or kustomize v5 ' +
  '(https://kubectl.docs.kubernetes.io/installation/kustomize/); Debian and Ubuntu package only an old kubectl ' +
  '(kubernetes-client 1.20) whose kustomize lacks components and replacements';

/** The kustomize command on this machine (`kubectl kustomize` or `kustomize build`), or undefined. */
export function findKustomize(): string[] | undefined {
  const kubectl = spawnSync('kubectl', ['kustomize', '--help'], { encoding: 'utf8' });
  if (kubectl.status === 0) return ['kubectl', 'kustomize'];
  const kustomize = spawnSync('kustomize', ['version'], { encoding: 'utf8' });
  if (kustomize.status === 0) return ['kustomize', 'build'];
  return undefined;
}

/** The add-on components, each for clusters with one operator (docs/deploying.md, "Deploying", "Cluster add-ons"). */
export const COMPONENTS = ['service-monitor', 'keda-pipeline-runner', 'external-secrets'] as const;

/** A rendered kustomization: its label in problems and its objects. */
export interface Rendered {
  where: string;
  resources: Obj[];
}

/**
 * Renders `infra/base`, `infra/overlays/dev`, `infra/overlays/prod` and the prod overlay with every
 * component of {@link COMPONENTS} (through a throw-away kustomization outside the tree).
 *
 * @param infraDir the `infra` directory to render (the repository's, or a test's copy)
 * @param kustomize the renderer, from {@link findKustomize}
 * @returns the rendered kustomizations; a failed render is a problem and is left out
 */
export function renderInfra(infraDir: string, kustomize: string[], problems: Problems): Rendered[] {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'check-deploy-'));
  try {
    const withAddOns = path.join(scratch, 'prod-with-add-ons');
    fs.mkdirSync(withAddOns);
    fs.writeFileSync(
      path.join(withAddOns, 'kustomization.yaml'),
      JSON.stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        // kustomize takes relative paths only.
        resources: [path.relative(withAddOns, path.join(infraDir, 'overlays', 'prod'))],
        components: COMPONENTS.map((c) => path.relative(withAddOns, path.join(infraDir, 'components', c))),
      }),
    );
    const targets: [string, string, string[]][] = [
      ['infra/base', path.join(infraDir, 'base'), []],
      ['infra/overlays/dev', path.join(infraDir, 'overlays', 'dev'), []],
      ['infra/overlays/prod', path.join(infraDir, 'overlays', 'prod'), []],
      [
        `infra/overlays/prod with ${COMPONENTS.map((c) => `components/${c}`).join(', ')}`,
        withAddOns,
        ['--load-restrictor', 'LoadRestrictionsNone'],
      ],
    ];
    const rendered: Rendered[] = [];
    for (const [where, dir, flags] of targets) {
      const [command = 'kubectl', ...args] = kustomize;
      const run = spawnSync(command, [...args, ...flags, dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
      if (run.status !== 0) {
        problems.add(where, `${kustomize.join(' ')} failed: ${(run.stderr || run.stdout).trim()}`);
        continue;
      }
      rendered.push({ where, resources: yamlDocuments(where, run.stdout, problems) });
    }
    return rendered;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** The npm module holding the models of an apiVersion: kubernetes-models, or an operator's package. */
export function modelModule(apiVersion: string): string {
  const group = apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '';
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  if (group === 'keda.sh') return `@kubernetes-models/keda/${apiVersion}`;
  if (group === 'external-secrets.io') return `@kubernetes-models/external-secrets/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

/** Loads the model class of apiVersion/kind (bundled JSON-schema validation, no network). */
async function modelFor(
  apiVersion: string,
  kind: string,
): Promise<{ validate: (o: unknown) => void } | undefined> {
  try {
    const mod = (await import(modelModule(apiVersion))) as Record<string, unknown>;
    const Model = mod[kind] as (new (data: unknown) => { validate(): void }) | undefined;
    if (!Model) return undefined;
    return { validate: (o) => new Model(o).validate() };
  } catch {
    return undefined;
  }
}

/** Validates every object against its API schema; an unknown apiVersion/kind is a problem too. */
export async function validateSchemas(where: string, resources: Obj[], problems: Problems): Promise<void> {
  for (const resource of resources) {
    const apiVersion = String(resource.apiVersion ?? '');
    const kind = String(resource.kind ?? '');
    const name = String(at(resource, 'metadata', 'name') ?? '?');
    const model = await modelFor(apiVersion, kind);
    if (!model) {
      problems.add(where, `${kind} ${name}: unknown apiVersion/kind ${apiVersion} ${kind}`);
      continue;
    }
    try {
      model.validate(resource);
    } catch (error) {
      problems.add(where, `${kind} ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/**
 * Unknown fields (a misspelt `readinesProbe`, a patch that added `minReplica`): the bundled schemas allow
 * extra properties, so every resource is also written as an object literal that must satisfy its
 * model's interface, where TypeScript rejects excess properties. One tsc run for all.
 */
export function checkUnknownFields(groups: Rendered[], problems: Problems): void {
  // Inside the repository, so that tsc resolves the model packages from its node_modules.
  const cache = path.join(ROOT, 'node_modules', '.cache');
  fs.mkdirSync(cache, { recursive: true });
  const dir = fs.mkdtempSync(path.join(cache, 'check-deploy-'));
  try {
    const file = path.join(dir, 'manifests.mts');
    const imports = new Map<string, string>();
    const lines: string[] = [];
    const owners: { line: number; label: string }[] = [];
    let n = 0;
    for (const { where, resources } of groups) {
      for (const resource of resources) {
        const apiVersion = String(resource.apiVersion ?? '');
        const kind = String(resource.kind ?? '');
        let alias = imports.get(apiVersion);
        if (alias === undefined) {
          alias = `m${imports.size}`;
          imports.set(apiVersion, alias);
        }
        owners.push({
          line: lines.length + 1,
          label: `${where}: ${kind} ${String(at(resource, 'metadata', 'name'))}`,
        });
        lines.push(
          ...`export const r${n} = ${JSON.stringify(resource, null, 2)} satisfies ${alias}.I${kind};`.split(
            '\n',
          ),
        );
        n += 1;
      }
    }
    const header = [...imports].map(
      ([apiVersion, alias]) => `import type * as ${alias} from '${modelModule(apiVersion)}';`,
    );
    fs.writeFileSync(file, [...header, ...lines].join('\n'));
    const tsc = spawnSync(
      path.join(ROOT, 'node_modules', '.bin', 'tsc'),
      [
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        file,
      ],
      { encoding: 'utf8', cwd: ROOT },
    );
    if (tsc.status === 0) return;
    for (const match of tsc.stdout.matchAll(/manifests\.mts\((\d+),\d+\): error TS\d+: ([^\n]+)/g)) {
      const line = Number(match[1]) - header.length;
      const owner = owners.filter((o) => o.line <= line).at(-1);
      const message = (match[2] ?? '').replace(/ in type '[^']*'/, '');
      problems.add(owner?.label ?? 'infra', `unknown or mistyped field: ${message}`);
    }
    if (!/manifests\.mts\(/.test(tsc.stdout)) problems.add('infra', `tsc failed: ${tsc.stdout}${tsc.stderr}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
