// Each regression the Kubernetes checks exist for, fed to them as a broken copy of infra/: the check
// must name it. Run by `npm test` (scripts/test.sh) with `tsx --test`; needs kubectl or kustomize v5.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ROOT } from './check-deploy-lib';
import { checkKubernetes } from './check-deploy-kubernetes';
import { findKustomize } from './check-deploy-render';
import { workflowImages } from './check-deploy-workflows';

const kustomize = findKustomize();
const images = workflowImages();
const copies: string[] = [];

/** A copy of the repository's infra/ with `edit` applied to it (paths relative to infra/). */
function brokenInfra(edit: (file: (rel: string, change: (text: string) => string) => void) => void): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-deploy-test-'));
  copies.push(dir);
  const infra = path.join(dir, 'infra');
  fs.cpSync(path.join(ROOT, 'infra'), infra, { recursive: true });
  edit((rel, change) => {
    const file = path.join(infra, rel);
    const before = fs.readFileSync(file, 'utf8');
    const afterEdit = change(before);
    assert.notEqual(afterEdit, before, `the edit of ${rel} changed nothing`);
    fs.writeFileSync(file, afterEdit);
  });
  return infra;
}

/** The problems the Kubernetes checks find in `infra`; the slow misspelt-field pass only when asked. */
async function problemsOf(
  infra: string,
  options: { release?: boolean; unknownFields?: boolean } = {},
): Promise<string[]> {
  if (!kustomize) throw new Error('no kustomize');
  return checkKubernetes(infra, {
    kustomize,
    images,
    release: options.release ?? false,
    unknownFields: options.unknownFields ?? false,
  });
}

function assertNamed(problems: string[], pattern: RegExp): void {
  assert.ok(
    problems.some((p) => pattern.test(p)),
    `no problem matches ${pattern}; found:\n  ${problems.join('\n  ') || '(none)'}`,
  );
}

const PROD = 'overlays/prod/kustomization.yaml';
const DEV = 'overlays/dev/kustomization.yaml';

// Concurrent: each test renders its own copy, and most of the time is spent in kustomize and tsc.
describe(
  'check-deploy on rendered overlays',
  { concurrency: true, skip: kustomize ? false : 'needs kubectl or kustomize v5' },
  () => {
    after(() => {
      for (const dir of copies) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('the repository as it is passes', async () => {
      assert.deepEqual(await problemsOf(path.join(ROOT, 'infra'), { unknownFields: true }), []);
    });

    test('an overlay that replaces the Ingress annotations loses the proxy buffer', async () => {
      const infra = brokenInfra((file) =>
        file(PROD, (text) =>
          text.replace(
            / {2}- patch: \|-\n {6}apiVersion: networking\.k8s\.io\/v1\n {6}kind: Ingress\n[\s\S]*$/,
            [
              '  - target:',
              '      kind: Ingress',
              '    patch: |-',
              '      - op: add',
              '        path: /metadata/annotations',
              '        value:',
              '          cert-manager.io/cluster-issuer: letsencrypt',
              '',
            ].join('\n'),
          ),
        ),
      );
      const problems = await problemsOf(infra);
      assertNamed(
        problems,
        /^infra\/overlays\/prod: Ingress agent-services lost the base annotation nginx\.ingress\.kubernetes\.io\/proxy-buffer-size/,
      );
      assertNamed(problems, /^infra\/overlays\/prod: .*proxy-buffer-size of at least 8k .*502/);
    });

    test('a tag the images workflow never pushes', async () => {
      const infra = brokenInfra((file) =>
        file(PROD, (text) => text.replace(/(market-intel\n {4}newTag: )'[^']*'/, "$1'stable'")),
      );
      assertNamed(
        await problemsOf(infra),
        /^infra\/overlays\/prod Deployment market-intel: image ghcr\.io\/[\w-]+\/agent-services\/market-intel:stable: the images workflow never pushes tag stable/,
      );
    });

    test('a moving tag in production', async () => {
      const infra = brokenInfra((file) =>
        file(PROD, (text) => text.replace(/(skill-router\n {4}newTag: )'[^']*'/, "$1'main'")),
      );
      assertNamed(
        await problemsOf(infra),
        /^infra\/overlays\/prod Deployment skill-router: .*not tag main, which moves/,
      );
    });

    test('a release still naming OWNER, with a version never tagged', async () => {
      // Whatever owner and version the committed overlay names after a release, this copy is unreleased.
      const infra = brokenInfra((file) =>
        file(PROD, (text) =>
          text
            .replace(/ghcr\.io\/[\w-]+\/agent-services\//g, 'ghcr.io/OWNER/agent-services/')
            .replace(/newTag: '[^']*'/g, "newTag: '999.0.0'"),
        ),
      );
      const problems = await problemsOf(infra, { release: true });
      assertNamed(
        problems,
        /^infra\/overlays\/prod Deployment market-intel: .*still names the OWNER placeholder/,
      );
      assertNamed(problems, /^infra\/overlays\/prod Job migrate-999\.0\.0: .*no git tag v999\.0\.0/);
    });

    test('replicas beside an HPA', async () => {
      const infra = brokenInfra((file) =>
        file(DEV, (text) =>
          text.replace('\npatches:\n', '\nreplicas:\n  - name: signal-feedback\n    count: 1\npatches:\n'),
        ),
      );
      assertNamed(
        await problemsOf(infra),
        /^infra\/overlays\/dev: Deployment signal-feedback sets replicas beside its autoscaler/,
      );
    });

    test('a missing probe', async () => {
      const infra = brokenInfra((file) =>
        file(
          DEV,
          (text) =>
            `${text}  - target:\n      kind: Deployment\n      name: skill-router\n    patch: |-\n      - op: remove\n        path: /spec/template/spec/containers/0/readinessProbe\n`,
        ),
      );
      assertNamed(
        await problemsOf(infra),
        /^infra\/overlays\/dev skill-router: readinessProbe must GET \/readyz/,
      );
    });

    test('a misspelt field', async () => {
      const infra = brokenInfra((file) =>
        file(
          DEV,
          (text) =>
            `${text}  - target:\n      kind: Deployment\n      name: market-intel\n    patch: |-\n      - op: add\n        path: /spec/template/spec/containers/0/readinesProbe\n        value: { httpGet: { path: /readyz, port: http } }\n`,
        ),
      );
      assertNamed(
        await problemsOf(infra, { unknownFields: true }),
        /^infra\/overlays\/dev: Deployment market-intel: unknown or mistyped field: .*readinesProbe/,
      );
    });

    test('no default-deny network policy, and a migrate Job that keeps its name', async () => {
      const infra = brokenInfra((file) => {
        file('base/kustomization.yaml', (text) => text.replace('  - network-policy.yaml\n', ''));
        file(PROD, (text) => text.replace(/\nreplacements:\n[\s\S]*?\npatches:\n/, '\npatches:\n'));
      });
      const problems = await problemsOf(infra);
      assertNamed(problems, /^infra\/overlays\/dev: has no default-deny NetworkPolicy/);
      assertNamed(
        problems,
        /^infra\/overlays\/prod: the migrate Job is named migrate, not migrate-<its image tag>/,
      );
    });
  },
);
