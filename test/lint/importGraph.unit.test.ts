// The runner's imports point one way: no module imports itself back through others (an import
// circle), and no folder of runner/src reaches back to a folder that reaches it (a folder
// cycle). Read from the sources' relative import and export-from specifiers.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../runner/src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Pure: every relative module specifier of a TypeScript source (type-only imports included). */
export function relativeSpecifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g)) found.push(m[1]!);
  for (const m of text.matchAll(/(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g)) found.push(m[1]!);
  return found;
}

/** Pure: the strongly connected components with more than one node (Tarjan), each sorted. */
export function cycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        onStack.delete(w);
        component.push(w);
        if (w === v) break;
      }
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('lint: the runner import graph (issue 28)', () => {
  const files = sources(src);
  const modules = new Set(files.map((f) => relative(src, f)));
  const fileEdges = new Map<string, Set<string>>();
  const folderEdges = new Map<string, Set<string>>();
  for (const file of files) {
    const from = relative(src, file);
    const to = new Set<string>();
    for (const spec of relativeSpecifiers(readFileSync(file, 'utf8'))) {
      const target = normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts');
      if (modules.has(target)) to.add(target);
    }
    fileEdges.set(from, to);
    const folder = from.split('/')[0]!;
    for (const t of to) {
      const other = t.split('/')[0]!;
      if (other !== folder && from.includes('/') && t.includes('/')) {
        if (!folderEdges.has(folder)) folderEdges.set(folder, new Set());
        folderEdges.get(folder)!.add(other);
      }
    }
  }

  it('the reader finds the imports it should (so an empty graph cannot pass)', () => {
    assert.ok(files.length > 200, `${files.length} sources`);
    assert.ok((fileEdges.get('cells/cellLifecycle.ts')?.size ?? 0) > 3);
    assert.deepEqual(
      relativeSpecifiers("import type { A } from './a.js';\nexport { b } from '../b.js';\nimport './c.js';\nconst s = 'from ./x.js';\n"),
      ['./a.js', '../b.js', './c.js'],
    );
    assert.deepEqual(
      cycles(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['a'])],
          ['c', new Set(['a'])],
        ]),
      ),
      [['a', 'b']],
    );
  });

  it('no import circle between modules', () => {
    assert.deepEqual(cycles(fileEdges), []);
  });

  it('no folder cycle between the folders of runner/src', () => {
    assert.deepEqual(cycles(folderEdges), []);
    assert.deepEqual([...(folderEdges.get('hostguard') ?? [])].sort(), ['protocol']);
    assert.equal(folderEdges.has('store'), false, 'the store imports no other layer');
  });
});
