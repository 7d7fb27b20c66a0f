/**
 * What the study test files share: a CSV parser (csv-parse, a root dev
 * dependency) and a scratch folder per file, one fresh directory per study,
 * removed when the file's tests end.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

export { parse } from 'csv-parse/sync';

/** A scratch folder for this test file (`root`, named `respbench-<name>-…`) and a maker of fresh study directories in it. */
export function studyScratch(name: string): { root: string; studyDir: () => string } {
  const root = mkdtempSync(path.join(tmpdir(), `respbench-${name}-`));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  let count = 0;
  const studyDir = () => {
    const dir = path.join(root, `s${++count}`);
    mkdirSync(dir);
    return dir;
  };
  return { root, studyDir };
}
