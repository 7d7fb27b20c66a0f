/**
 * No module cycle in the TypeScript (issue 19): madge over the CLI's and the
 * report's sources, type-only imports and lazy import()s counted too, since
 * a cycle through types still ties two modules into one job.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const packages = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Cycles allowed on purpose: none (engine-js/plan.ts <-> progress.ts went
 * with issue 19's rework). Kept as a list so a future exception is written
 * down here; an entry that is no longer a cycle fails the test.
 */
const ALLOWED_CYCLES: readonly string[][] = [];

/** The cycles among the .ts files under `dir`, each as the files it passes through (relative to `dir`). */
async function cyclesOf(dir: string, tsConfig: string): Promise<string[][]> {
  const skip = { skipTypeImports: false, skipAsyncImports: false };
  const graph = await madge(dir, { fileExtensions: ['ts'], tsConfig, detectiveOptions: { ts: skip, es6: skip } });
  return graph.circular();
}

const key = (cycle: readonly string[]) => cycle.join(' -> ');

/** madge parses every file: seconds on a busy machine, far past vitest's default 5 s. */
const PARSE_TIMEOUT_MS = 120_000;

describe('module cycles', () => {
  it.each([
    ['cli', 'cli/src', ALLOWED_CYCLES],
    ['report', 'report/src', []],
  ] as const)('%s: none, type imports and lazy imports included', async (_name, dir, allowed) => {
    const found = await cyclesOf(path.join(packages, dir), path.join(packages, dir, '../tsconfig.json'));
    const allowedKeys = new Set(allowed.map(key));
    expect(found.map(key).filter((c) => !allowedKeys.has(c)), 'module cycles (a -> b -> ... -> a)').toEqual([]);
    const stale = allowed.map(key).filter((c) => !found.map(key).includes(c));
    expect(stale, 'ALLOWED_CYCLES entries that are no longer cycles: remove them').toEqual([]);
  }, PARSE_TIMEOUT_MS);

  it('the check sees a cycle made only of type imports, and one through a lazy import()', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cycles-'));
    try {
      writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true } }));
      writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b.js';\nexport interface A { b: B }\n");
      writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a.js';\nexport interface B { a?: A }\n");
      writeFileSync(path.join(dir, 'c.ts'), "export async function c() { return (await import('./d.js')).d; }\n");
      writeFileSync(path.join(dir, 'd.ts'), "import { c } from './c.js';\nexport const d = c;\n");
      const found = (await cyclesOf(dir, path.join(dir, 'tsconfig.json'))).map(key).sort();
      expect(found).toEqual(['a.ts -> b.ts', 'c.ts -> d.ts']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, PARSE_TIMEOUT_MS);
});
