// The endpoint map check on this repository and on a small tree: it must pass a complete map and name
// each missing or stale operation, tool and file. Run by `npm test` (scripts/test.sh) with `tsx --test`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { checkEndpointMap, expandPath } from './check-endpoint-map';

const trees: string[] = [];
after(() => {
  for (const dir of trees) fs.rmSync(dir, { recursive: true, force: true });
});

/** A tree with three services of one operation each, and the map `rows` (table rows without the header). */
function tree(rows: string[]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'check-endpoint-map-'));
  trees.push(root);
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  for (const service of ['market-intel', 'signal-feedback', 'skill-router']) {
    write(
      `packages/api-client/openapi/${service}.json`,
      JSON.stringify({ paths: { '/api/items/{id}': { get: {}, delete: {}, parameters: [] } } }),
    );
    write(`services/${service}/src/entry-points/http/items.ts`, '');
    write(`services/${service}/src/domain/items.ts`, '');
    write(`services/${service}/src/data/items.ts`, '');
    write(
      `services/${service}/src/entry-points/mcp/tools.ts`,
      "export const tools = [{ name: 'get_item' }];\n",
    );
  }
  const map = [
    '# Architecture',
    '',
    '## Where each endpoint lives',
    '',
    '| endpoint | route | use case | query |',
    '|---|---|---|---|',
    ...rows,
    '',
    '## Next',
    '',
  ];
  write('docs/architecture.md', map.join('\n'));
  return root;
}

const row = (service: string, endpoint = '`GET/DELETE /api/items/{id}`; MCP `get_item`') =>
  `| ${service} ${endpoint} | \`entry-points/http/items.ts\` | \`domain/items.ts\` | \`data/items.ts\` |`;

describe('check-endpoint-map', () => {
  test("this repository's map names every operation, tool and file", () => {
    assert.deepEqual(checkEndpointMap(path.join(__dirname, '..')), []);
  });

  test('a complete map passes', () => {
    assert.deepEqual(
      checkEndpointMap(tree([row('market-intel'), row('signal-feedback'), row('skill-router')])),
      [],
    );
  });

  test('an operation or tool in no row, one that does not exist and a missing file are each reported', () => {
    const problems = checkEndpointMap(
      tree([
        row('market-intel', '`GET /api/items/{id}`, `PUT /api/items/{id}`; MCP `get_item`, `put_item`'),
        row('signal-feedback'),
        '| skill-router `GET/DELETE /api/items/{id}`; MCP `get_item` | `entry-points/http/gone.ts` | none | — |',
      ]),
    );
    assert.deepEqual(problems, [
      'docs/architecture.md: market-intel operation DELETE /api/items/{id} is in no row (packages/api-client/openapi/market-intel.json)',
      'docs/architecture.md:7: market-intel has no operation PUT /api/items/{id} (packages/api-client/openapi/market-intel.json)',
      'docs/architecture.md:7: market-intel has no MCP tool put_item (services/market-intel/src/entry-points)',
      'docs/architecture.md:9: services/skill-router/src/entry-points/http/gone.ts does not exist',
      'docs/architecture.md:9: the query cell names no data/ file (or says none)',
    ]);
  });

  test('a brace group with commas lists alternatives; a path parameter stays', () => {
    assert.deepEqual(expandPath('/api/{a,b}/{id}/{c, d}'), [
      '/api/a/{id}/c',
      '/api/a/{id}/d',
      '/api/b/{id}/c',
      '/api/b/{id}/d',
    ]);
  });
});
