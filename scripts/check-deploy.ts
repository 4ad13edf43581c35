// Offline checks of the deployment files that the schema validators cannot make: that they agree with the
// code (variable names each config.ts reads, ports, start commands), with the rules of README, "Deploying"
// (non-root images, probes, restricted security contexts, migrations first) and with the README.
// Run by scripts/check-deploy.sh after the schema and lint checks; exits 1 listing every problem.
//   tsx scripts/check-deploy.ts [--rendered <dir with dev.yaml, prod.yaml, base.yaml>]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { validate as lintDockerfile, ValidationSeverity } from 'dockerfile-utils';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

const ROOT = path.resolve(__dirname, '..');
const SERVICES = ['market-intel', 'pipeline-runner', 'signal-feedback', 'skill-router'] as const;
type ServiceName = (typeof SERVICES)[number];
/** Services with a PostgreSQL database and Prisma migrations. */
const DB_SERVICES: readonly ServiceName[] = ['market-intel', 'signal-feedback', 'skill-router'];

const problems: string[] = [];
function problem(where: string, message: string): void {
  problems.push(`${where}: ${message}`);
}

function read(rel: string): string {
  return fs.readFileSync(path.join(ROOT, rel), 'utf8');
}

/** A plain object of a parsed YAML/JSON document, or undefined. */
type Obj = Record<string, unknown>;
function obj(value: unknown): Obj | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Obj) : undefined;
}
function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
function at(value: unknown, ...keys: (string | number)[]): unknown {
  let current = value;
  for (const key of keys) {
    if (typeof key === 'number') current = arr(current)[key];
    else current = obj(current)?.[key];
  }
  return current;
}

/** Variable names a service's zod config schema reads: its own keys plus the shared BaseHttpEnv keys. */
function configKeys(service: ServiceName): Set<string> {
  const keys = new Set<string>();
  for (const file of [`services/${service}/src/config.ts`, 'packages/service-kit/src/config.ts']) {
    for (const match of read(file).matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)) if (match[1]) keys.add(match[1]);
  }
  return keys;
}

/** The default PORT of a service's config (`PORT: intVar(3001, ...)`). */
function configPort(service: ServiceName): number | undefined {
  const match = /PORT:\s*intVar\((\d+)/.exec(read(`services/${service}/src/config.ts`));
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

const KEYS = Object.fromEntries(SERVICES.map((s) => [s, configKeys(s)])) as Record<ServiceName, Set<string>>;
const PORTS = Object.fromEntries(SERVICES.map((s) => [s, configPort(s)])) as Record<
  ServiceName,
  number | undefined
>;
/** Variables the migrate image reads (docker/migrate.sh). */
const MIGRATE_KEYS = new Set(read('docker/migrate.sh').match(/\b[A-Z][A-Z_]*DATABASE_URL\b/g) ?? []);

function checkNames(where: string, names: Iterable<string>, allowed: Set<string>): void {
  for (const name of names)
    if (!allowed.has(name)) problem(where, `sets ${name}, which the service does not read`);
}

// ---------------------------------------------------------------- Dockerfiles

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Instructions of a Dockerfile with continuation lines joined, grouped by build stage. */
function dockerStages(text: string): Instruction[][] {
  const stages: Instruction[][] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const start = i;
    let line = lines[i] ?? '';
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) {
      i += 1;
      line = `${line.slice(0, -1)} ${lines[i] ?? ''}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match?.[1]) continue;
    const instruction = { keyword: match[1].toUpperCase(), args: (match[2] ?? '').trim(), line: start + 1 };
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** The exec-form JSON array of CMD/ENTRYPOINT, or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string')
      ? (parsed as string[])
      : undefined;
  } catch {
    return undefined;
  }
}

function checkDockerfile(file: string, expect: { port?: number; health?: string; start?: string }): void {
  const text = read(file);
  for (const d of lintDockerfile(text)) {
    if (d.severity === ValidationSeverity.ERROR || d.severity === ValidationSeverity.WARNING) {
      problem(
        `${file}:${d.range.start.line + 1}`,
        typeof d.message === 'string' ? d.message : d.message.value,
      );
    }
  }
  const stages = dockerStages(text);
  if (stages.length < 2) problem(file, 'is not a multi-stage build');
  const final = stages.at(-1) ?? [];
  const from = final.find((i) => i.keyword === 'FROM');
  const finalBase = from?.args.split(/\s+/)[0] ?? '';
  const resolvedBase = finalBase.replace(
    /^\$\{?NODE_IMAGE\}?$/,
    /ARG NODE_IMAGE=(\S+)/.exec(text)?.[1] ?? finalBase,
  );
  if (!/^(node:[\w.-]*(slim|alpine)[\w.-]*|gcr\.io\/distroless\/[\w./-]+:[\w.-]+|base)$/.test(resolvedBase)) {
    problem(file, `final stage image ${resolvedBase} is not a slim, alpine or distroless node image`);
  }
  const users = final.filter((i) => i.keyword === 'USER');
  const user = users.at(-1)?.args ?? '';
  if (!/^[1-9]\d*(:\d+)?$/.test(user))
    problem(file, `final stage must run as a numeric non-root USER (found "${user}")`);
  if (!final.some((i) => i.keyword === 'ENV' && /\bNODE_ENV=production\b/.test(i.args))) {
    problem(file, 'final stage does not set NODE_ENV=production');
  }
  if (!text.includes('--frozen-lockfile')) problem(file, 'does not install with --frozen-lockfile');
  checkPatchesCopied(file, stages.flat());
  if (expect.port !== undefined) {
    const exposed = final.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    if (!exposed.includes(String(expect.port))) problem(file, `does not EXPOSE ${expect.port}`);
  }
  if (expect.health !== undefined) {
    const check = final.find((i) => i.keyword === 'HEALTHCHECK');
    if (!check) problem(file, 'final stage has no HEALTHCHECK');
    else if (!check.args.includes(expect.health) || !/CMD \["node"/.test(check.args)) {
      problem(file, `HEALTHCHECK must fetch ${expect.health} with node`);
    }
  }
  if (expect.start !== undefined) {
    const cmd = final.filter((i) => i.keyword === 'CMD').at(-1);
    const argv = cmd ? execForm(cmd.args) : undefined;
    if (!argv) problem(file, 'final stage needs an exec-form CMD');
    else if (argv.join(' ') !== expect.start) {
      problem(file, `CMD "${argv.join(' ')}" differs from the package's start script "${expect.start}"`);
    }
  }
}

/** The patch files pnpm-workspace.yaml names, which pnpm reads before it fetches or installs anything. */
const PATCH_FILES: string[] = Object.values(
  obj(obj(parseYaml(read('pnpm-workspace.yaml')))?.patchedDependencies) ?? {},
).filter((f): f is string => typeof f === 'string');

/** pnpm stops with ERR_PNPM_PATCH_NOT_FOUND when a patch file is not in the image before its first pnpm step. */
function checkPatchesCopied(file: string, instructions: Instruction[]): void {
  if (PATCH_FILES.length === 0) return;
  const first = instructions.findIndex((i) => i.keyword === 'RUN' && /\bpnpm (fetch|install)\b/.test(i.args));
  if (first < 0) return;
  const copied = instructions
    .slice(0, first)
    .filter((i) => i.keyword === 'COPY')
    .some((i) => {
      const sources = i.args
        .split(/\s+/)
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1);
      return sources.some((source) => /^(\.|patches)\/?$/.test(source));
    });
  if (!copied) {
    problem(
      `${file}:${instructions[first]?.line ?? 1}`,
      `pnpm runs before patches/ is copied (${PATCH_FILES.join(', ')})`,
    );
  }
}

function checkDockerfiles(): void {
  for (const service of SERVICES) {
    const pkg = JSON.parse(read(`services/${service}/package.json`)) as { scripts?: Record<string, string> };
    const start: string | undefined = pkg.scripts?.start;
    checkDockerfile(`docker/${service}.Dockerfile`, {
      port: PORTS[service],
      health: '/livez',
      ...(start ? { start } : {}),
    });
  }
  checkDockerfile('docker/solana-localnet.Dockerfile', { port: 8899, health: '/health' });
  checkDockerfile('docker/migrate.Dockerfile', {});
  const migrate = read('docker/migrate.Dockerfile');
  if (!read('docker/migrate.sh').includes('prisma migrate deploy'))
    problem('docker/migrate.sh', 'does not run prisma migrate deploy');
  if (!migrate.includes('docker/migrate.sh'))
    problem('docker/migrate.Dockerfile', 'does not install docker/migrate.sh');
}

// ---------------------------------------------------------------- compose

function envNames(environment: unknown): string[] {
  if (Array.isArray(environment)) return environment.map((e) => String(e).split('=')[0] ?? '');
  return Object.keys(obj(environment) ?? {});
}

function checkCompose(): void {
  const file = 'docker/compose.yaml';
  const compose = obj(parseYaml(read(file), { merge: true }));
  const services = obj(compose?.services) ?? {};
  for (const name of ['postgres', 'rabbitmq', 'ledger', 'migrate', ...SERVICES]) {
    if (!services[name]) problem(file, `has no service "${name}"`);
  }
  for (const [name, value] of Object.entries(services)) {
    const service = obj(value) ?? {};
    const where = `${file} services.${name}`;
    const dockerfile = at(service, 'build', 'dockerfile');
    if (typeof dockerfile === 'string' && !fs.existsSync(path.join(ROOT, dockerfile))) {
      problem(where, `builds ${dockerfile}, which does not exist`);
    }
    if (name !== 'migrate' && !service.healthcheck) problem(where, 'has no healthcheck');
    const env = envNames(service.environment);
    if ((SERVICES as readonly string[]).includes(name)) {
      const svc = name as ServiceName;
      checkNames(where, env, KEYS[svc]);
      const ports = arr(service.ports).map(String);
      if (!ports.some((p) => p.endsWith(`:${PORTS[svc]}`)))
        problem(where, `does not publish port ${PORTS[svc]}`);
      if (DB_SERVICES.includes(svc)) {
        if (at(service, 'depends_on', 'migrate', 'condition') !== 'service_completed_successfully') {
          problem(where, 'must depend on migrate with condition service_completed_successfully');
        }
        const url = at(service, 'environment', 'DATABASE_URL');
        const database = svc.replace('-', '_');
        if (typeof url !== 'string' || !url.endsWith(`/${database}`))
          problem(where, `DATABASE_URL must name database ${database}`);
      }
      if (svc === 'market-intel' || svc === 'pipeline-runner') {
        if (at(service, 'depends_on', 'rabbitmq', 'condition') !== 'service_healthy') {
          problem(where, 'must depend on a healthy rabbitmq');
        }
      }
    }
    if (name === 'migrate') {
      checkNames(where, env, MIGRATE_KEYS);
      if (at(service, 'depends_on', 'postgres', 'condition') !== 'service_healthy') {
        problem(where, 'must depend on a healthy postgres');
      }
      const init = read('docker/postgres-init.sql');
      for (const svc of DB_SERVICES) {
        if (!init.includes(`CREATE DATABASE ${svc.replace('-', '_')};`)) {
          problem('docker/postgres-init.sql', `does not create ${svc.replace('-', '_')}`);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- Kubernetes

/** Loads a kubernetes-models class for apiVersion/kind (bundled JSON-schema validation, no network). */
async function modelFor(
  apiVersion: string,
  kind: string,
): Promise<{ validate: (o: unknown) => void } | undefined> {
  const modulePath = `kubernetes-models/${apiVersion}`;
  try {
    const mod = (await import(modulePath)) as Record<string, unknown>;
    const Model = mod[kind] as (new (data: unknown) => { validate(): void }) | undefined;
    if (!Model) return undefined;
    return { validate: (o) => new Model(o).validate() };
  } catch {
    return undefined;
  }
}

function resourcesOf(file: string, text: string): Obj[] {
  const docs: Obj[] = [];
  for (const doc of parseAllDocuments(text, { merge: true })) {
    if (doc.errors.length > 0) problem(file, `YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = obj(doc.toJS());
    if (value) docs.push(value);
  }
  return docs;
}

async function validateSchemas(where: string, resources: Obj[]): Promise<void> {
  for (const resource of resources) {
    const apiVersion = String(resource.apiVersion ?? '');
    const kind = String(resource.kind ?? '');
    const name = String(at(resource, 'metadata', 'name') ?? '?');
    const model = await modelFor(apiVersion, kind);
    if (!model) {
      problem(where, `${kind} ${name}: unknown apiVersion/kind ${apiVersion} ${kind}`);
      continue;
    }
    try {
      model.validate(resource);
    } catch (error) {
      problem(where, `${kind} ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/**
 * Unknown fields (a misspelt `readinesProbe`, a patch that added `minReplica`): the bundled schemas allow
 * extra properties, so every resource is also written as an object literal that must satisfy its
 * kubernetes-models interface, where TypeScript rejects excess properties. One tsc run for all.
 */
function checkUnknownFields(groups: { where: string; resources: Obj[] }[]): void {
  const dir = path.join(ROOT, 'node_modules', '.cache', 'check-deploy');
  fs.mkdirSync(dir, { recursive: true });
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
    ([apiVersion, alias]) => `import type * as ${alias} from 'kubernetes-models/${apiVersion}';`,
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
    { encoding: 'utf8' },
  );
  if (tsc.status === 0) return;
  for (const match of tsc.stdout.matchAll(/manifests\.mts\((\d+),\d+\): error TS\d+: ([^\n]+)/g)) {
    const line = Number(match[1]) - header.length;
    const owner = owners.filter((o) => o.line <= line).at(-1);
    const message = (match[2] ?? '').replace(/ in type '[^']*'/, '');
    problem(owner?.label ?? 'infra', `unknown or mistyped field: ${message}`);
  }
  if (!/manifests\.mts\(/.test(tsc.stdout)) problem('infra', `tsc failed: ${tsc.stdout}${tsc.stderr}`);
}

function byKind(resources: Obj[], kind: string): Map<string, Obj> {
  const map = new Map<string, Obj>();
  for (const r of resources) if (r.kind === kind) map.set(String(at(r, 'metadata', 'name')), r);
  return map;
}

function checkContainerSecurity(where: string, podSpec: unknown): void {
  const pod = obj(at(podSpec, 'securityContext')) ?? {};
  if (pod.runAsNonRoot !== true) problem(where, 'pod securityContext.runAsNonRoot must be true');
  if (at(pod, 'seccompProfile', 'type') !== 'RuntimeDefault')
    problem(where, 'pod seccompProfile must be RuntimeDefault');
  const tmpVolumes = new Set(
    arr(at(podSpec, 'volumes'))
      .filter((v) => obj(at(v, 'emptyDir')) !== undefined)
      .map((v) => String(at(v, 'name'))),
  );
  for (const container of arr(at(podSpec, 'containers'))) {
    const name = String(at(container, 'name'));
    const sc = obj(at(container, 'securityContext')) ?? {};
    const w = `${where} container ${name}`;
    if (sc.allowPrivilegeEscalation !== false) problem(w, 'allowPrivilegeEscalation must be false');
    if (sc.readOnlyRootFilesystem !== true) problem(w, 'readOnlyRootFilesystem must be true');
    if (
      !(typeof sc.runAsUser === 'number' && sc.runAsUser > 0) &&
      !(typeof pod.runAsUser === 'number' && pod.runAsUser > 0)
    ) {
      problem(w, 'runAsUser must be a non-zero UID');
    }
    if (!arr(at(sc, 'capabilities', 'drop')).includes('ALL')) problem(w, 'capabilities must drop ALL');
    const tmp = arr(at(container, 'volumeMounts')).find((m) => at(m, 'mountPath') === '/tmp');
    if (!tmp || !tmpVolumes.has(String(at(tmp, 'name')))) problem(w, 'needs an emptyDir mounted at /tmp');
    for (const kind of ['requests', 'limits']) {
      for (const resource of ['cpu', 'memory']) {
        if (at(container, 'resources', kind, resource) === undefined)
          problem(w, `resources.${kind}.${resource} missing`);
      }
    }
  }
}

/** Requirements of the rendered manifests of one overlay (or of the base). */
function checkManifests(where: string, resources: Obj[]): void {
  const deployments = byKind(resources, 'Deployment');
  const services = byKind(resources, 'Service');
  const configMaps = byKind(resources, 'ConfigMap');
  const hpas = byKind(resources, 'HorizontalPodAutoscaler');
  const pdbs = byKind(resources, 'PodDisruptionBudget');
  for (const service of SERVICES) {
    const w = `${where} ${service}`;
    const deployment = deployments.get(service);
    if (!deployment) {
      problem(w, 'has no Deployment');
      continue;
    }
    if (!services.has(service)) problem(w, 'has no Service');
    if (!pdbs.has(service)) problem(w, 'has no PodDisruptionBudget');
    const hpa = hpas.get(service);
    if (!hpa) problem(w, 'has no HorizontalPodAutoscaler');
    else if (at(hpa, 'spec', 'scaleTargetRef', 'name') !== service)
      problem(w, 'HPA does not target its Deployment');
    const podSpec = at(deployment, 'spec', 'template', 'spec');
    checkContainerSecurity(`${w} Deployment`, podSpec);
    const container = at(podSpec, 'containers', 0);
    const probes: [string, string][] = [
      ['readinessProbe', '/readyz'],
      ['livenessProbe', '/livez'],
    ];
    for (const [probe, probePath] of probes) {
      if (at(container, probe, 'httpGet', 'path') !== probePath) problem(w, `${probe} must GET ${probePath}`);
    }
    const ports = arr(at(container, 'ports')).map((p) => at(p, 'containerPort'));
    if (!ports.includes(PORTS[service])) problem(w, `container does not expose port ${PORTS[service]}`);
    const env = arr(at(container, 'env')).map((e) => String(at(e, 'name')));
    checkNames(`${w} Deployment env`, env, KEYS[service]);
    const portEnv = arr(at(container, 'env')).find((e) => at(e, 'name') === 'PORT');
    if (portEnv && at(portEnv, 'value') !== String(PORTS[service]))
      problem(w, 'PORT env differs from the container port');
    for (const from of arr(at(container, 'envFrom'))) {
      const ref = at(from, 'configMapRef', 'name');
      if (typeof ref === 'string') {
        const cm = configMaps.get(ref);
        if (!cm) problem(w, `envFrom ConfigMap ${ref} is not in the manifests`);
        else checkNames(`${w} ConfigMap ${ref}`, Object.keys(obj(cm.data) ?? {}), KEYS[service]);
      }
    }
  }
  const job = byKind(resources, 'Job').get('migrate');
  if (!job) problem(where, 'has no migrate Job');
  else {
    const podSpec = at(job, 'spec', 'template', 'spec');
    checkContainerSecurity(`${where} Job migrate`, podSpec);
    const migrated = arr(at(podSpec, 'containers')).map((c) => String(at(c, 'args', 0)));
    for (const svc of DB_SERVICES)
      if (!migrated.includes(svc)) problem(where, `migrate Job does not migrate ${svc}`);
  }
  const ingresses = resources.filter((r) => r.kind === 'Ingress');
  if (ingresses.length === 0) problem(where, 'has no Ingress');
  const routed = new Set(
    ingresses.flatMap((i) =>
      arr(at(i, 'spec', 'rules')).flatMap((rule) =>
        arr(at(rule, 'http', 'paths')).map((p) => String(at(p, 'backend', 'service', 'name'))),
      ),
    ),
  );
  for (const svc of ['market-intel', 'signal-feedback', 'skill-router']) {
    if (!routed.has(svc)) problem(where, `Ingress does not route to ${svc}`);
  }
  if (routed.has('pipeline-runner')) problem(where, 'Ingress must not expose the pipeline-runner');
}

/** Secrets of files mounted into a service (not environment variables). */
const FILE_SECRETS = new Set(['market-intel-keys']);

function checkSecretTemplate(): Obj[] {
  const file = 'infra/base/secret.example.yaml';
  const secrets = resourcesOf(file, read(file));
  for (const secret of secrets) {
    const name = String(at(secret, 'metadata', 'name')) as ServiceName;
    // A file Secret (keypair files mounted into a service) holds files, not variables.
    if (secret.kind === 'Secret' && FILE_SECRETS.has(String(name))) {
      for (const [key, value] of Object.entries(obj(secret.stringData) ?? {})) {
        if (!String(value).includes('CHANGE_ME'))
          problem(`${file} ${name}`, `${key} must be a CHANGE_ME placeholder`);
      }
      continue;
    }
    if (secret.kind !== 'Secret' || !SERVICES.includes(name)) {
      problem(file, `unexpected ${String(secret.kind)} ${name}`);
      continue;
    }
    const keys = Object.keys(obj(secret.stringData) ?? {});
    checkNames(`${file} ${name}`, keys, KEYS[name]);
    for (const [key, value] of Object.entries(obj(secret.stringData) ?? {})) {
      if (!String(value).includes('CHANGE_ME'))
        problem(`${file} ${name}`, `${key} must be a CHANGE_ME placeholder`);
    }
    if (DB_SERVICES.includes(name) && !keys.includes('DATABASE_URL'))
      problem(`${file} ${name}`, 'has no DATABASE_URL');
  }
  const kustomization = obj(parseYaml(read('infra/base/kustomization.yaml')));
  if (arr(kustomization?.resources).includes('secret.example.yaml'))
    problem(file, 'must not be applied by kustomize');
  return secrets;
}

async function checkKubernetes(renderedDir: string | undefined): Promise<void> {
  const secrets = checkSecretTemplate();
  await validateSchemas('infra/base/secret.example.yaml', secrets);
  const groups = [{ where: 'infra/base/secret.example.yaml', resources: secrets }];
  if (renderedDir) {
    for (const overlay of ['base', 'dev', 'prod']) {
      const file = path.join(renderedDir, `${overlay}.yaml`);
      const resources = resourcesOf(file, fs.readFileSync(file, 'utf8'));
      const where = overlay === 'base' ? 'infra/base' : `infra/overlays/${overlay}`;
      await validateSchemas(where, resources);
      checkManifests(where, resources);
      groups.push({ where, resources });
      if (overlay === 'prod') {
        for (const d of byKind(resources, 'Deployment').values()) {
          const image = String(at(d, 'spec', 'template', 'spec', 'containers', 0, 'image'));
          if (!/^[\w.-]+\.[\w.-]+\/.+:[\w.-]+$/.test(image))
            problem(where, `image ${image} is not a registry image with a tag`);
        }
      }
    }
  } else {
    // No kustomize renderer: the base files are complete manifests on their own, so check those.
    const files = [
      'market-intel',
      'pipeline-runner',
      'signal-feedback',
      'skill-router',
      'migrate-job',
      'ingress',
    ];
    const resources = files.flatMap((f) => resourcesOf(`infra/base/${f}.yaml`, read(`infra/base/${f}.yaml`)));
    await validateSchemas('infra/base', resources);
    checkManifests('infra/base', resources);
    groups.push({ where: 'infra/base', resources });
  }
  checkUnknownFields(groups);
}

// ---------------------------------------------------------------- workflows and README

function checkWorkflows(): void {
  const dir = '.github/workflows';
  const files = fs.readdirSync(path.join(ROOT, dir)).filter((f) => /\.ya?ml$/.test(f));
  const all: string[] = [];
  for (const f of files) {
    const file = `${dir}/${f}`;
    const text = read(file);
    all.push(text);
    const workflow = obj(parseYaml(text));
    if (!workflow?.on) problem(file, 'has no "on" trigger');
    const jobs = obj(workflow?.jobs) ?? {};
    if (Object.keys(jobs).length === 0) problem(file, 'has no jobs');
    for (const [name, job] of Object.entries(jobs)) {
      if (!at(job, 'runs-on')) problem(file, `job ${name} has no runs-on`);
      if (arr(at(job, 'steps')).length === 0) problem(file, `job ${name} has no steps`);
    }
  }
  const text = all.join('\n');
  const required: [RegExp, string][] = [
    [/pnpm install --frozen-lockfile/, 'a frozen pnpm install'],
    [/pnpm (exec )?turbo run (typecheck|lint)|pnpm (typecheck|lint)/, 'lint and typecheck'],
    [/image: postgres:/, 'a PostgreSQL service container'],
    [/image: rabbitmq:/, 'a RabbitMQ service container'],
    [
      /prisma migrate diff[\s\S]*--from-migrations[\s\S]*--to-schema[\s\S]*--exit-code/,
      'the Prisma drift check',
    ],
    [/docker\/build-push-action/, 'an image build'],
    [/packages: write/, 'permission to push packages'],
  ];
  for (const [pattern, what] of required) if (!pattern.test(text)) problem(dir, `no workflow has ${what}`);
  for (const service of [...SERVICES, 'solana-localnet', 'migrate']) {
    if (
      !text.includes(`docker/${service}.Dockerfile`) &&
      !/docker\/\$\{\{ matrix\.[a-z]+ \}\}\.Dockerfile/.test(text)
    ) {
      problem(dir, `no workflow builds docker/${service}.Dockerfile`);
    }
    if (!new RegExp(`(^|[\\s,\\[])${service}([\\s,\\]]|$)`, 'm').test(text))
      problem(dir, `no workflow names the image ${service}`);
  }
}

function checkReadme(): void {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Deploying');
  if (start === -1) {
    problem('README.md', 'has no "## Deploying" section');
    return;
  }
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const codes = [...section.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '');
  for (const code of codes) {
    for (const token of code.split(/\s+/)) {
      if (/^(docker|infra|\.github|scripts)\/[\w./-]*[\w]$/.test(token) && !token.includes('*')) {
        if (!fs.existsSync(path.join(ROOT, token)))
          problem('README.md "Deploying"', `names ${token}, which does not exist`);
      }
    }
  }
  const allKeys = new Set([...SERVICES.flatMap((s) => [...KEYS[s]]), ...MIGRATE_KEYS]);
  for (const code of codes) {
    // Variable names (with an underscore: not HEALTHCHECK or OWNER).
    if (/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(code) && !allKeys.has(code)) {
      problem('README.md "Deploying"', `names ${code}, which no service reads`);
    }
  }
}

async function main(): Promise<void> {
  const flag = process.argv.indexOf('--rendered');
  const renderedDir = flag === -1 ? undefined : process.argv[flag + 1];
  checkDockerfiles();
  checkCompose();
  await checkKubernetes(renderedDir);
  checkWorkflows();
  checkReadme();
  if (problems.length > 0) {
    process.stderr.write(`check-deploy: ${problems.length} problem(s)\n  ${problems.join('\n  ')}\n`);
    process.exit(1);
  }
  process.stdout.write(
    'check-deploy: Dockerfiles, compose, Kubernetes manifests, workflows and README agree\n',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `check-deploy: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
