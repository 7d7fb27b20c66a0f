import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fallbackNoticeOnce } from '../src/fallback-notice.js';

const dirs: string[] = [];
const fresh = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'respbench-notice-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the JS-engine fallback notice', () => {
  it('is shown once per reason, remembered under XDG_CACHE_HOME, and says how to silence it', () => {
    const cache = fresh();
    const env = { XDG_CACHE_HOME: cache };
    const first = fallbackNoticeOnce('no native binary for linux-riscv64', env);
    expect(first).toMatch(/^respbench: using the JS engine \(native engine unavailable: no native binary for linux-riscv64\); /);
    expect(first).toContain('--engine js');
    expect(first).not.toContain('\n');
    expect(fallbackNoticeOnce('no native binary for linux-riscv64', env)).toBeNull();
    expect(fallbackNoticeOnce('@respbench/native is not installed', env)).not.toBeNull();
    expect(readFileSync(path.join(cache, 'respbench', 'fallback-notices-shown'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('falls back to ~/.cache without XDG_CACHE_HOME', () => {
    const home = fresh();
    expect(fallbackNoticeOnce('x', { HOME: home })).not.toBeNull();
    expect(fallbackNoticeOnce('x', { HOME: home })).toBeNull();
    expect(readFileSync(path.join(home, '.cache', 'respbench', 'fallback-notices-shown'), 'utf8')).toBe('x\n');
  });

  it('keeps showing it when the state cannot be written', () => {
    const cache = fresh();
    writeFileSync(path.join(cache, 'respbench'), 'a file where the directory should be');
    expect(fallbackNoticeOnce('x', { XDG_CACHE_HOME: cache })).not.toBeNull();
    expect(fallbackNoticeOnce('x', { XDG_CACHE_HOME: cache })).not.toBeNull();
  });
});
