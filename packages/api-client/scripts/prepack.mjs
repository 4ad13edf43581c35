// Runs before `pnpm pack` / `pnpm publish` (README, "Publishing"): builds dist, then writes the
// manifest that is published — named `publishName` (the one place the published scope is set),
// without the workspace-only `@repo/source` export condition, scripts or dev dependencies. The
// workspace manifest is kept in .package.json.workspace and put back by postpack.mjs.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

const MANIFEST = new URL('../package.json', import.meta.url);
const SAVED = new URL('../.package.json.workspace', import.meta.url);

if (existsSync(SAVED))
  throw new Error('.package.json.workspace exists: a previous pack did not finish; restore it first');
execFileSync('pnpm', ['run', 'build'], { cwd: new URL('..', import.meta.url), stdio: 'inherit' });

const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
if (
  typeof manifest.publishName !== 'string' ||
  !/^@[a-z0-9-~][a-z0-9-._~]*\/[a-z0-9-~][a-z0-9-._~]*$/.test(manifest.publishName)
)
  throw new Error('package.json publishName must be a scoped package name, e.g. "@your-scope/api-client"');
const internal = Object.keys(manifest.dependencies ?? {}).filter((name) => name.startsWith('@repo/'));
if (internal.length > 0)
  throw new Error(`internal packages in dependencies (bundle them instead): ${internal.join(', ')}`);

const stripSource = (value) =>
  typeof value === 'object' && value !== null
    ? Object.fromEntries(
        Object.entries(value)
          .filter(([key]) => key !== '@repo/source')
          .map(([key, inner]) => [key, stripSource(inner)]),
      )
    : value;

const { publishName, scripts: _scripts, devDependencies: _dev, private: _private, ...rest } = manifest;
const published = { ...rest, name: publishName, exports: stripSource(manifest.exports) };
copyFileSync(MANIFEST, SAVED);
writeFileSync(MANIFEST, `${JSON.stringify(published, null, 2)}\n`);
