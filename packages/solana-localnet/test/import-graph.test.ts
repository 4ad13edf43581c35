import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The modules of src import each other without a cycle (type-only imports included): shared shapes
// live in a module both sides import (tx-record.ts), so no module needs the one that imports it.
const SRC = path.join(__dirname, '..', 'src');

/** Each module of `dir` (name without `.ts`) and the modules of `dir` it imports, sorted. */
function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(dir, file), 'utf8'), true, true);
    const local = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('./'))
      .map((name) => name.slice(2).replace(/\.(js|ts)$/, ''));
    graph.set(file.replace(/\.ts$/, ''), [...new Set(local)].sort());
  }
  return graph;
}

/** The first cycle found, as the modules in import order ending where it started, or null. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (node: string): string[] | null => {
    const at = stack.indexOf(node);
    if (at !== -1) return [...stack.slice(at), node];
    if (done.has(node)) return null;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    done.add(node);
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

describe('import graph of src', () => {
  it('When the modules of src are read, then none imports itself through others', () => {
    const graph = importGraph(SRC);
    expect(graph.get('ledger')).toContain('parsed');
    const cycle = findCycle(graph);
    expect(cycle === null ? 'no cycle' : `cycle: ${cycle.join(' -> ')}`).toBe('no cycle');
  });

  it('When modules import each other in a ring, then the check names the cycle', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', []],
    ]);
    expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a']);
    expect(findCycle(new Map([['a', []]]))).toBeNull();
  });
});
