// The Kubernetes part of the deployment checks: what docs/deploying.md, "Deploying" promises of infra/base,
// the dev and prod overlays and the prod overlay with every add-on component, once rendered and validated
// against the Kubernetes API schemas (scripts/check-deploy-render.ts). scripts/check-deploy.ts runs it; scripts/check-deploy.test.ts feeds it broken copies.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Problems, ROOT, arr, at, obj, yamlDocuments, type Obj } from './check-deploy-lib';
import {
  DB_SERVICES,
  IMAGES,
  KEYS,
  PORTS,
  SERVICES,
  checkNames,
  type ServiceName,
} from './check-deploy-services';
import type { WorkflowImages } from './check-deploy-workflows';
import { checkUnknownFields, renderInfra, validateSchemas, type Rendered } from './check-deploy-render';

function byKind(resources: Obj[], kind: string): Map<string, Obj> {
  const map = new Map<string, Obj>();
  for (const r of resources) if (r.kind === kind) map.set(String(at(r, 'metadata', 'name')), r);
  return map;
}

/** Pod template of a workload object (Deployment, Job). */
function podSpecOf(workload: Obj): unknown {
  return at(workload, 'spec', 'template', 'spec');
}

/** Every container of a pod spec, init containers included. */
function containersOf(podSpec: unknown): unknown[] {
  return [...arr(at(podSpec, 'initContainers')), ...arr(at(podSpec, 'containers'))];
}

function checkContainerSecurity(where: string, podSpec: unknown, problems: Problems): void {
  const pod = obj(at(podSpec, 'securityContext')) ?? {};
  if (pod.runAsNonRoot !== true) problems.add(where, 'pod securityContext.runAsNonRoot must be true');
  if (at(pod, 'seccompProfile', 'type') !== 'RuntimeDefault')
    problems.add(where, 'pod seccompProfile must be RuntimeDefault');
  const tmpVolumes = new Set(
    arr(at(podSpec, 'volumes'))
      .filter((v) => obj(at(v, 'emptyDir')) !== undefined)
      .map((v) => String(at(v, 'name'))),
  );
  for (const container of containersOf(podSpec)) {
    const name = String(at(container, 'name'));
    const sc = obj(at(container, 'securityContext')) ?? {};
    const w = `${where} container ${name}`;
    if (sc.allowPrivilegeEscalation !== false) problems.add(w, 'allowPrivilegeEscalation must be false');
    if (sc.readOnlyRootFilesystem !== true) problems.add(w, 'readOnlyRootFilesystem must be true');
    if (
      !(typeof sc.runAsUser === 'number' && sc.runAsUser > 0) &&
      !(typeof pod.runAsUser === 'number' && pod.runAsUser > 0)
    ) {
      problems.add(w, 'runAsUser must be a non-zero UID');
    }
    if (!arr(at(sc, 'capabilities', 'drop')).includes('ALL')) problems.add(w, 'capabilities must drop ALL');
    const tmp = arr(at(container, 'volumeMounts')).find((m) => at(m, 'mountPath') === '/tmp');
    if (!tmp || !tmpVolumes.has(String(at(tmp, 'name'))))
      problems.add(w, 'needs an emptyDir mounted at /tmp');
    for (const kind of ['requests', 'limits']) {
      for (const resource of ['cpu', 'memory']) {
        if (at(container, 'resources', kind, resource) === undefined)
          problems.add(w, `resources.${kind}.${resource} missing`);
      }
    }
  }
}

/** Options of {@link checkManifests}. */
export interface ManifestOptions {
  /** The base Ingress, whose annotations every overlay must keep. */
  baseIngress: Obj | undefined;
  /** What the workflows produce, for the image references. */
  images: WorkflowImages;
  /** Whether this is a production rendering (images pinned by semver or digest). */
  production: boolean;
  /** Release mode (`check-deploy --release`): no OWNER placeholder, and the tag's git tag exists. */
  release: boolean;
  /** Whether this is the base (no overlay: images untagged, the migrate Job named `migrate`). */
  base: boolean;
}

/** The smallest buffer for a 402's headers: PAYMENT-REQUIRED alone is up to about 4 KB. */
const MIN_PROXY_BUFFER_BYTES = 8 * 1024;

function bytes(size: string): number | undefined {
  const match = /^(\d+)([kKmM]?)$/.exec(size.trim());
  if (!match?.[1]) return undefined;
  const unit = match[2]?.toLowerCase();
  return Number(match[1]) * (unit === 'k' ? 1024 : unit === 'm' ? 1024 * 1024 : 1);
}

function checkIngress(where: string, resources: Obj[], options: ManifestOptions, problems: Problems): void {
  const ingresses = resources.filter((r) => r.kind === 'Ingress');
  if (ingresses.length === 0) problems.add(where, 'has no Ingress');
  const routed = new Set(
    ingresses.flatMap((i) =>
      arr(at(i, 'spec', 'rules')).flatMap((rule) =>
        arr(at(rule, 'http', 'paths')).map((p) => String(at(p, 'backend', 'service', 'name'))),
      ),
    ),
  );
  for (const svc of ['market-intel', 'signal-feedback', 'skill-router']) {
    if (!routed.has(svc)) problems.add(where, `Ingress does not route to ${svc}`);
  }
  if (routed.has('pipeline-runner')) problems.add(where, 'Ingress must not expose the pipeline-runner');
  for (const ingress of ingresses) {
    const name = String(at(ingress, 'metadata', 'name'));
    const annotations = obj(at(ingress, 'metadata', 'annotations')) ?? {};
    const baseAnnotations = obj(at(options.baseIngress, 'metadata', 'annotations')) ?? {};
    for (const [key, value] of Object.entries(baseAnnotations)) {
      if (!(key in annotations)) problems.add(where, `Ingress ${name} lost the base annotation ${key}`);
      else if (annotations[key] !== value && key !== 'nginx.ingress.kubernetes.io/proxy-buffer-size')
        problems.add(where, `Ingress ${name} changed the base annotation ${key}`);
    }
    const buffer = annotations['nginx.ingress.kubernetes.io/proxy-buffer-size'];
    const size = typeof buffer === 'string' ? bytes(buffer) : undefined;
    if (size === undefined || size < MIN_PROXY_BUFFER_BYTES) {
      problems.add(
        where,
        `Ingress ${name} needs nginx.ingress.kubernetes.io/proxy-buffer-size of at least 8k (found ${String(buffer)}): ` +
          'ingress-nginx turns every 402 with its PAYMENT-REQUIRED header into a 502 with the default 4k',
      );
    }
  }
}

function gitTagExists(tag: string): boolean {
  return (
    spawnSync('git', ['rev-parse', '--verify', '--quiet', `refs/tags/${tag}`], { cwd: ROOT }).status === 0
  );
}

/** Checks one image reference against what the workflows produce. */
function checkImage(where: string, image: string, options: ManifestOptions, problems: Problems): void {
  const match =
    /^(?<repository>[^@:]+)(?::(?<tag>\w[\w.-]{0,127}))?(?:@(?<digest>sha256:[0-9a-f]{64}))?$/.exec(image);
  const repository = match?.groups?.repository ?? image;
  const tag = match?.groups?.tag;
  const digest = match?.groups?.digest;
  if (options.base) {
    if (!/^agent-services\/[a-z0-9-]+$/.test(repository) || tag !== undefined)
      problems.add(where, `base image ${image} must be an untagged agent-services/<name> the overlays set`);
    return;
  }
  if (repository.startsWith('agent-services/')) {
    if (options.production) problems.add(where, `image ${image} is a local build, not a pushed release`);
    else if (tag === undefined || !options.images.local.has(`${repository}:${tag}`))
      problems.add(
        where,
        `image ${image} is built by no workflow (local images: ${[...options.images.local].join(', ') || 'none'})`,
      );
    return;
  }
  // OWNER is the documented placeholder of the committed prod overlay; a release replaces it.
  const placeholder = repository.includes('/OWNER/');
  const pushed = options.images.repository?.exec(
    placeholder ? repository.replace('/OWNER/', '/owner/') : repository,
  );
  const name = pushed?.[2];
  if (!pushed || !name || !(IMAGES as readonly string[]).includes(name)) {
    problems.add(
      where,
      `image ${image} is not a repository the images workflow pushes (ghcr.io/<lowercase owner>/agent-services/<name>)`,
    );
    return;
  }
  if (placeholder && options.release) {
    problems.add(
      where,
      `image ${image} still names the OWNER placeholder (docs/deploying.md, "Deploying", "Releases")`,
    );
  }
  if (digest === undefined && tag === undefined) {
    problems.add(where, `image ${image} has neither a tag nor a digest`);
    return;
  }
  if (tag !== undefined) {
    const rule = options.images.tags.find((t) => t.pattern.test(tag));
    if (!rule) {
      problems.add(
        where,
        `image ${image}: the images workflow never pushes tag ${tag} (its rules: ${options.images.tags.map((t) => t.rule).join('; ')})`,
      );
      return;
    }
    if (options.production && digest === undefined && !rule.rule.includes('{{version}}')) {
      problems.add(
        where,
        `image ${image}: production pins a release (X.Y.Z) or a digest, not tag ${tag}, which moves`,
      );
    }
    if (options.release && rule.rule.includes('{{version}}') && !gitTagExists(`v${tag}`)) {
      problems.add(where, `image ${image}: no git tag v${tag}, so the images workflow never pushed ${tag}`);
    }
  }
}

/**
 * Requirements of one rendered kustomization (docs/deploying.md, "Deploying"): per service a Deployment
 * (probes, resources, restricted security context, topology spread, no `replicas` where an
 * autoscaler rules), Service, PodDisruptionBudget and autoscaler; the migrate Job; the Ingress with
 * the base's annotations; default-deny network policies; images the workflows produce.
 */
export function checkManifests(
  where: string,
  resources: Obj[],
  options: ManifestOptions,
  problems: Problems,
): void {
  const deployments = byKind(resources, 'Deployment');
  const services = byKind(resources, 'Service');
  const configMaps = byKind(resources, 'ConfigMap');
  const hpas = byKind(resources, 'HorizontalPodAutoscaler');
  const scaledObjects = byKind(resources, 'ScaledObject');
  const pdbs = byKind(resources, 'PodDisruptionBudget');
  const autoscaled = new Set(
    [...hpas.values(), ...scaledObjects.values()].map((a) => String(at(a, 'spec', 'scaleTargetRef', 'name'))),
  );
  for (const [name, deployment] of deployments) {
    if (autoscaled.has(name) && at(deployment, 'spec', 'replicas') !== undefined) {
      problems.add(
        where,
        `Deployment ${name} sets replicas beside its autoscaler: every kubectl apply would reset the scale it chose`,
      );
    }
  }
  for (const service of SERVICES) {
    const w = `${where} ${service}`;
    const deployment = deployments.get(service);
    if (!deployment) {
      problems.add(w, 'has no Deployment');
      continue;
    }
    if (!services.has(service)) problems.add(w, 'has no Service');
    if (!pdbs.has(service)) problems.add(w, 'has no PodDisruptionBudget');
    const hpa = hpas.get(service);
    const scaledObject = scaledObjects.get(service);
    if (!hpa && !scaledObject) problems.add(w, 'has no HorizontalPodAutoscaler (nor a KEDA ScaledObject)');
    if (hpa && at(hpa, 'spec', 'scaleTargetRef', 'name') !== service)
      problems.add(w, 'HPA does not target its Deployment');
    if (hpa && scaledObject) problems.add(w, 'has both an HPA and a KEDA ScaledObject, which would fight');
    const podSpec = podSpecOf(deployment);
    checkContainerSecurity(`${w} Deployment`, podSpec, problems);
    const spread = arr(at(podSpec, 'topologySpreadConstraints')).map((c) => at(c, 'topologyKey'));
    for (const key of ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'])
      if (!spread.includes(key)) problems.add(w, `Deployment has no topologySpreadConstraints on ${key}`);
    const container = at(podSpec, 'containers', 0);
    const probes: [string, string][] = [
      ['startupProbe', '/livez'],
      ['readinessProbe', '/readyz'],
      ['livenessProbe', '/livez'],
    ];
    for (const [probe, probePath] of probes) {
      if (at(container, probe, 'httpGet', 'path') !== probePath)
        problems.add(w, `${probe} must GET ${probePath}`);
    }
    const ports = arr(at(container, 'ports')).map((p) => at(p, 'containerPort'));
    if (!ports.includes(PORTS[service])) problems.add(w, `container does not expose port ${PORTS[service]}`);
    const env = arr(at(container, 'env')).map((e) => String(at(e, 'name')));
    checkNames(problems, `${w} Deployment env`, env, KEYS[service]);
    const portEnv = arr(at(container, 'env')).find((e) => at(e, 'name') === 'PORT');
    if (portEnv && at(portEnv, 'value') !== String(PORTS[service]))
      problems.add(w, 'PORT env differs from the container port');
    for (const from of arr(at(container, 'envFrom'))) {
      const ref = at(from, 'configMapRef', 'name');
      if (typeof ref === 'string') {
        const cm = configMaps.get(ref);
        if (!cm) problems.add(w, `envFrom ConfigMap ${ref} is not in the manifests`);
        else checkNames(problems, `${w} ConfigMap ${ref}`, Object.keys(obj(cm.data) ?? {}), KEYS[service]);
      }
    }
  }
  const jobs = [...byKind(resources, 'Job').values()].filter(
    (j) => at(j, 'metadata', 'labels', 'app.kubernetes.io/name') === 'migrate',
  );
  const job = jobs[0];
  if (!job) problems.add(where, 'has no migrate Job');
  else {
    const name = String(at(job, 'metadata', 'name'));
    const image = String(at(podSpecOf(job), 'containers', 0, 'image'));
    const tag = /:([\w][\w.-]*)(@|$)/.exec(image.replace(/^[^/]*:\d+\//, ''))?.[1];
    if (options.base ? name !== 'migrate' : name !== `migrate-${tag ?? ''}`) {
      problems.add(
        where,
        `the migrate Job is named ${name}, not migrate-<its image tag>: a Job's template cannot change, so each release needs a Job of its own`,
      );
    }
    checkContainerSecurity(`${where} Job ${name}`, podSpecOf(job), problems);
    const migrated = arr(at(podSpecOf(job), 'containers')).map((c) => String(at(c, 'args', 0)));
    for (const svc of DB_SERVICES)
      if (!migrated.includes(svc)) problems.add(where, `migrate Job does not migrate ${svc}`);
  }
  for (const workload of [...deployments.values(), ...jobs]) {
    const images = new Set(containersOf(podSpecOf(workload)).map((c) => String(at(c, 'image'))));
    for (const image of images) {
      checkImage(
        `${where} ${String(workload.kind)} ${String(at(workload, 'metadata', 'name'))}`,
        image,
        options,
        problems,
      );
    }
  }
  checkIngress(where, resources, options, problems);
  checkNetworkPolicies(where, resources, problems);
}

/** A default-deny policy for every pod of the namespace, DNS allowed, and every workload selected. */
function checkNetworkPolicies(where: string, resources: Obj[], problems: Problems): void {
  const policies = resources.filter((r) => r.kind === 'NetworkPolicy');
  const selectsAll = (p: Obj): boolean =>
    Object.keys(obj(at(p, 'spec', 'podSelector')) ?? { x: 1 }).length === 0;
  const types = (p: Obj): string[] => arr(at(p, 'spec', 'policyTypes')).map(String);
  const denyAll = policies.find(
    (p) =>
      selectsAll(p) &&
      types(p).includes('Ingress') &&
      types(p).includes('Egress') &&
      at(p, 'spec', 'ingress') === undefined &&
      at(p, 'spec', 'egress') === undefined,
  );
  if (!denyAll)
    problems.add(
      where,
      'has no default-deny NetworkPolicy (empty podSelector, Ingress and Egress, no rules)',
    );
  const dns = policies.some((p) =>
    arr(at(p, 'spec', 'egress')).some((rule) =>
      arr(at(rule, 'ports')).some((port) => at(port, 'port') === 53),
    ),
  );
  if (!dns) problems.add(where, 'no NetworkPolicy allows DNS (port 53) egress');
}

/** The secret template: every key a placeholder and read by its service; never applied by kustomize. */
export function checkSecretTemplate(infraDir: string, problems: Problems): Obj[] {
  const file = 'infra/base/secret.example.yaml';
  const secrets = yamlDocuments(
    file,
    fs.readFileSync(path.join(infraDir, 'base', 'secret.example.yaml'), 'utf8'),
    problems,
  );
  // A file Secret (keypair files mounted into a service) holds files, not variables.
  const fileSecrets = new Set(['market-intel-keys']);
  for (const secret of secrets) {
    const name = String(at(secret, 'metadata', 'name'));
    for (const [key, value] of Object.entries(obj(secret.stringData) ?? {})) {
      if (!String(value).includes('CHANGE_ME'))
        problems.add(`${file} ${name}`, `${key} must be a CHANGE_ME placeholder`);
    }
    if (secret.kind === 'Secret' && fileSecrets.has(name)) continue;
    if (secret.kind !== 'Secret' || !(SERVICES as readonly string[]).includes(name)) {
      problems.add(file, `unexpected ${String(secret.kind)} ${name}`);
      continue;
    }
    const service = name as ServiceName;
    const keys = Object.keys(obj(secret.stringData) ?? {});
    checkNames(problems, `${file} ${name}`, keys, KEYS[service]);
    if (DB_SERVICES.includes(service) && !keys.includes('DATABASE_URL'))
      problems.add(`${file} ${name}`, 'has no DATABASE_URL');
  }
  const kustomization = obj(
    parseYaml(fs.readFileSync(path.join(infraDir, 'base', 'kustomization.yaml'), 'utf8')),
  );
  if (arr(kustomization?.resources).includes('secret.example.yaml'))
    problems.add(file, 'must not be applied by kustomize');
  return secrets;
}

/** The External Secrets component writes exactly the Secrets the template describes. */
function checkExternalSecrets(rendered: Rendered, secrets: Obj[], problems: Problems): void {
  const external = rendered.resources.filter((r) => r.kind === 'ExternalSecret');
  if (external.length === 0) return;
  const targets = new Set(
    external.map((e) => String(at(e, 'spec', 'target', 'name') ?? at(e, 'metadata', 'name'))),
  );
  for (const secret of secrets) {
    const name = String(at(secret, 'metadata', 'name'));
    if (!targets.has(name)) problems.add(rendered.where, `no ExternalSecret writes the Secret ${name}`);
  }
}

/**
 * Renders and checks the Kubernetes manifests under `infraDir`.
 *
 * @param infraDir the `infra` directory (the repository's, or a test's broken copy)
 * @param options `kustomize` (from {@link findKustomize}), `images` (from `workflowImages`), `release`
 *   (the release checks of docs/deploying.md, "Deploying", "Releases"), `unknownFields` (default true: the one tsc
 *   run that finds misspelt fields, most of the time taken)
 * @returns every problem found, as `where: message` lines (empty when all holds)
 */
export async function checkKubernetes(
  infraDir: string,
  options: { kustomize: string[]; images: WorkflowImages; release: boolean; unknownFields?: boolean },
): Promise<string[]> {
  const problems = new Problems();
  const secrets = checkSecretTemplate(infraDir, problems);
  await validateSchemas('infra/base/secret.example.yaml', secrets, problems);
  const rendered = renderInfra(infraDir, options.kustomize, problems);
  const baseIngress = rendered
    .find((r) => r.where === 'infra/base')
    ?.resources.find((r) => r.kind === 'Ingress');
  for (const group of rendered) {
    await validateSchemas(group.where, group.resources, problems);
    const base = group.where === 'infra/base';
    checkManifests(
      group.where,
      group.resources,
      {
        baseIngress,
        images: options.images,
        production: group.where.startsWith('infra/overlays/prod'),
        release: options.release,
        base,
      },
      problems,
    );
    checkExternalSecrets(group, secrets, problems);
  }
  if (options.unknownFields !== false)
    checkUnknownFields(
      [{ where: 'infra/base/secret.example.yaml', resources: secrets }, ...rendered],
      problems,
    );
  return problems.list;
}
