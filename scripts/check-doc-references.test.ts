// The documentation citation check on small trees: it must name each broken citation and pass good
// ones. Run by `npm test` (scripts/test.sh) with `tsx --test`. The citations below are assembled from
// parts so that the check of this repository does not read them as its own.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { extractHeadings, headingMatches, scan } from './check-doc-references';

const trees: string[] = [];
after(() => {
  for (const dir of trees) fs.rmSync(dir, { recursive: true, force: true });
});

const Q = '"';

/** A citation of `doc` as the code writes one: the document, a comma, then each heading quoted. */
function cite(doc: string, ...headings: string[]): string {
  return `${doc}, ${headings.map((h) => Q + h + Q).join(', ')}`;
}

/** A temporary tree holding `files` (paths relative to it). */
function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'check-doc-references-'));
  trees.push(root);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

const ROOT_README = ['# Project', '', '## Deploying', '', '### Releases', '', '## Configuration', ''].join(
  '\n',
);

describe('check-doc-references', () => {
  test('a citation of a heading that exists passes, one that does not is reported with its line', () => {
    const root = tree({
      'README.md': ROOT_README,
      'scripts/good.ts': `// Reads the settings (${cite('README', 'Configuration')}).\n`,
      'scripts/bad.ts': `const a = 1;\n// Deploys (${cite('README', 'Deployment')}).\n`,
    });
    const { citations, broken } = scan(root);
    assert.equal(citations.length, 2);
    assert.deepEqual(
      broken.map((b) => b.message),
      [
        `scripts/bad.ts:2: cites README.md, ${Q}Deployment${Q}, which does not exist (closest heading in README.md: ${Q}Deploying${Q})`,
      ],
    );
  });

  test('a chain names a sub-heading inside the section of the heading before it', () => {
    const root = tree({
      'README.md': ROOT_README,
      'infra/a.yaml': `# Released so (${cite('README', 'Deploying', 'Releases')}).\n`,
      'infra/b.yaml': `# Not nested there (${cite('README', 'Configuration', 'Releases')}).\n`,
    });
    const { broken } = scan(root);
    assert.deepEqual(
      broken.map((b) => `${b.file}:${b.line}`),
      ['infra/b.yaml:1'],
    );
    assert.match(broken[0]?.message ?? '', /which does not exist \(no .Releases. under .Configuration.;/);
  });

  test("a bare README inside a package is the package's own, then the root one; a path is from the root", () => {
    const root = tree({
      'README.md': ROOT_README,
      'packages/x/README.md': '# @repo/x\n\n## Tests\n',
      'docs/architecture.md': '# Architecture\n\n## Runtime\n',
      'packages/x/src/a.ts': [
        `/** Own (${cite('README', 'Tests')}), root (${cite('README', 'Configuration')}). */`,
        `/** A path (${cite('docs/architecture.md', 'Runtime')}), wrapped over two`,
        ` * lines (docs/architecture.md, ${Q}Run`,
        ` * time${Q}). Missing (${cite('packages/x/README.md', 'Configuration')}). */`,
      ].join('\n'),
    });
    const { citations, broken } = scan(root);
    assert.equal(citations.length, 5);
    assert.deepEqual(
      broken.map((b) => `${b.line}: ${b.chain.join(' > ')}`),
      ['3: Run time', '4: Configuration'],
    );
  });

  test('a citation of a file that does not exist is reported', () => {
    const root = tree({
      'README.md': ROOT_README,
      'docker/x.Dockerfile': `# (${cite('ARCH.md', 'Runtime')})\n`,
    });
    assert.match(
      scan(root).broken[0]?.message ?? '',
      /^docker\/x\.Dockerfile:1: cites ARCH\.md, "Runtime", which does not exist/,
    );
  });

  test('headings inside fenced code blocks are not headings; a trailing parenthetical may be left out', () => {
    const headings = extractHeadings(
      '# A\n\n```bash\n# not a heading\n```\n\n### prove/debate (`src/prove/`)\n',
    );
    assert.deepEqual(
      headings.map((h) => h.text),
      ['A', 'prove/debate (`src/prove/`)'],
    );
    assert.ok(headingMatches('prove/debate', 'prove/debate (`src/prove/`)'));
    assert.ok(!headingMatches('prove', 'prove/debate (`src/prove/`)'));
  });
});
