// Offline checks of the deployment files that the schema validators cannot make: that they agree with the
// code (variable names each config.ts reads, ports, start commands), with the rules of docs/deploying.md, "Deploying"
// (non-root images, probes, restricted security contexts, migrations first, released images) and with the
// README. Run by scripts/check-deploy.sh after the schema and lint checks; exits 1 listing every problem.
//   tsx scripts/check-deploy.ts [--release]
// --release adds the checks of a release about to be applied (docs/deploying.md, "Deploying", "Releases"): the prod
// overlay names no OWNER placeholder and its tags have their git tags.
import fs from 'node:fs';
import path from 'node:path';
import { validate as lintDockerfile, ValidationSeverity } from 'dockerfile-utils';
import { parse as parseYaml } from 'yaml';
import { Problems, ROOT, arr, at, obj, read } from './check-deploy-lib';
import {
  DB_SERVICES,
  IMAGES,
  KEYS,
  PORTS,
  SERVICES,
  checkNames as checkNamesInto,
  type ServiceName,
} from './check-deploy-services';
import { workflowImages } from './check-deploy-workflows';
import { checkKubernetes } from './check-deploy-kubernetes';
import { KUSTOMIZE_HINT, findKustomize } from './check-deploy-render';

const report = new Problems();
function problem(where: string, message: string): void {
  report.add(where, message);
}
function checkNames(where: string, names: Iterable<string>, allowed: Set<string>): void {
  checkNamesInto(report, where, names, allowed);
}
/** Variables the migrate image reads (docker/migrate.sh). */
const MIGRATE_KEYS = new Set(read('docker/migrate.sh').match(/\b[A-Z][A-Z_]*DATABASE_URL\b/g) ?? []);
/** The Node major the images run (docs/deploying.md, "Deploying"). */
const NODE_MAJOR = 24;

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
  const nodeImage = /ARG NODE_IMAGE=node:(\d+)/.exec(text)?.[1];
  if (nodeImage !== String(NODE_MAJOR))
    problem(
      file,
      `builds on Node ${nodeImage ?? '?'}, not Node ${NODE_MAJOR} LTS (ARG NODE_IMAGE=node:${NODE_MAJOR}-...)`,
    );
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
    // Readiness compares the image's prisma/migrations with the database (docs/deploying.md, "Deploying", "Migrations").
    if (
      DB_SERVICES.includes(service) &&
      !/for part in [^;]*\bprisma\b/.test(read(`docker/${service}.Dockerfile`))
    )
      problem(
        `docker/${service}.Dockerfile`,
        'does not copy prisma/ (the migrations readiness waits for) into the image',
      );
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
  // The cluster end-to-end run's PostgreSQL and RabbitMQ are compose's, so that one bump moves both.
  for (const backing of ['postgres', 'rabbitmq']) {
    const image = String(at(services, backing, 'image'));
    const e2e = `infra/e2e/kind/${backing}.yaml`;
    if (fs.existsSync(path.join(ROOT, e2e)) && !read(e2e).includes(`image: ${image}\n`))
      problem(e2e, `runs another ${backing} image than docker/compose.yaml (${image})`);
  }
  for (const name of ['postgres', 'rabbitmq', 'ledger', 'migrate', ...SERVICES]) {
    if (!services[name]) problem(file, `has no service "${name}"`);
  }
  for (const [name, value] of Object.entries(services)) {
    const service = obj(value) ?? {};
    const where = `${file} services.${name}`;
    const image = typeof service.image === 'string' ? service.image : '';
    // A pulled image (no build) is pinned to a version: a major alone moves under the stack.
    if (!service.build && !/^[\w./-]+:\d+\.\d+(\.\d+)?(-[\w.-]+)?(@sha256:[0-9a-f]{64})?$/.test(image))
      problem(where, `image ${image || '(none)'} is not pinned to a version (e.g. postgres:16.10-bookworm)`);
    for (const limit of ['cpus', 'memory']) {
      if (at(service, 'deploy', 'resources', 'limits', limit) === undefined)
        problem(where, `has no deploy.resources.limits.${limit}`);
    }
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
      // A tag can be moved to other code; a commit SHA cannot.
      for (const step of arr(at(job, 'steps'))) {
        const uses = at(step, 'uses');
        if (
          typeof uses === 'string' &&
          !uses.startsWith('./') &&
          !/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/.test(uses)
        )
          problem(file, `job ${name} uses ${uses}: pin every action by its full commit SHA`);
      }
    }
  }
  const text = all.join('\n');
  for (const node of ['20', '22', '24'])
    if (!new RegExp(`node: \\[[^\\]]*\\b${node}\\b`).test(text))
      problem(dir, `no test job runs on Node ${node}`);
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
    [/tags: \[['"]?v\*['"]?\]/, 'a build of the release tags (v*)'],
    [/type=semver,pattern=\{\{version\}\}/, 'semver image tags'],
    [
      /aquasecurity\/trivy-action@[^\n]*\n(\s+[\w-]+:.*\n)*?\s+exit-code: ['"]?1/,
      'an image scan that fails the build',
    ],
    [
      /aquasecurity\/trivy-action@[^\n]*\n(\s+[\w-]+:.*\n)*?\s+severity: ['"]?CRITICAL/,
      'an image scan for critical CVEs',
    ],
    [/sigstore\/cosign-installer@[\s\S]*cosign sign --yes/, 'keyless image signing'],
    [/id-token: write/, 'the OIDC token keyless signing needs'],
    [/node-version: \$\{\{ matrix\.node \}\}/, 'the tests on a matrix of Node versions'],
    [/kubeconform/, 'kubeconform on the rendered overlays'],
  ];
  for (const [pattern, what] of required) if (!pattern.test(text)) problem(dir, `no workflow has ${what}`);
  for (const service of IMAGES) {
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

function checkDeployingDoc(): void {
  const section = read('docs/deploying.md');
  const codes = [...section.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '');
  for (const code of codes) {
    for (const token of code.split(/\s+/)) {
      if (/^(docker|infra|\.github|scripts)\/[\w./-]*[\w]$/.test(token) && !token.includes('*')) {
        if (!fs.existsSync(path.join(ROOT, token)))
          problem('docs/deploying.md', `names ${token}, which does not exist`);
      }
    }
  }
  const allKeys = new Set([...SERVICES.flatMap((s) => [...KEYS[s]]), ...MIGRATE_KEYS]);
  for (const code of codes) {
    // Variable names (with an underscore: not HEALTHCHECK or OWNER).
    if (/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(code) && !allKeys.has(code)) {
      problem('docs/deploying.md', `names ${code}, which no service reads`);
    }
  }
}

async function main(): Promise<void> {
  const release = process.argv.includes('--release');
  const kustomize = findKustomize();
  if (!kustomize) {
    process.stderr.write(`check-deploy: cannot render the overlays without kustomize: ${KUSTOMIZE_HINT}\n`);
    process.exit(2);
  }
  checkDockerfiles();
  checkCompose();
  for (const line of await checkKubernetes(path.join(ROOT, 'infra'), {
    kustomize,
    images: workflowImages(),
    release,
  }))
    report.list.push(line);
  checkWorkflows();
  checkDeployingDoc();
  if (report.list.length > 0) {
    process.stderr.write(`check-deploy: ${report.list.length} problem(s)\n  ${report.list.join('\n  ')}\n`);
    process.exit(1);
  }
  process.stdout.write(
    `check-deploy: Dockerfiles, compose, Kubernetes manifests (base, dev, prod, prod with add-ons), workflows and docs/deploying.md agree${release ? ', and the prod overlay is a release' : ''}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `check-deploy: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
