/**
 * Two studies started in the same second into the same --out keep both sets
 * of files: the second gets a numbered stamp instead of overwriting the first.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { outputPaths } from '../packages/cli/dist/study/outputs.js';

describe('study output names', () => {
  it('never reuse the files of a study started in the same second', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-out-'));
    try {
      const first = outputPaths(dir, 'same', '20261130_070000');
      expect(path.basename(first.detail)).toBe('same_detail_20261130_070000.csv');
      writeFileSync(first.markdown, 'first');
      const second = outputPaths(dir, 'same', '20261130_070000');
      expect(path.basename(second.detail)).toBe('same_detail_20261130_070000_2.csv');
      expect(second.markdown).not.toBe(first.markdown);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
