import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fallbackNoticeOnce, missingBinaryReason, napiTriple } from '../src/fallback-notice.js';

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

describe('why no native binary loaded, and the step that fixes it', () => {
  const prebuilt = ['@respbench/native-linux-x64-gnu', '@respbench/native-darwin-arm64'];
  it('a published install without its platform package (--omit=optional, a foreign lockfile): npm i that package, no cargo', () => {
    const why = missingBinaryReason({ triple: 'linux-x64-gnu', sourceCheckout: false, prebuilt });
    expect(why).toContain('npm i @respbench/native-linux-x64-gnu');
    expect(why).not.toContain('cargo');
  });

  it('a source checkout: the binary is built there, with cargo', () => {
    const why = missingBinaryReason({ triple: 'linux-x64-gnu', sourceCheckout: true, prebuilt });
    expect(why).toContain('building needs cargo: pnpm --filter @respbench/native build');
    expect(why).not.toContain('npm i');
  });

  it('a platform with no prebuilt binary: building from source needs cargo', () => {
    const why = missingBinaryReason({ triple: 'linux-riscv64-gnu', sourceCheckout: false, prebuilt });
    expect(why).toBe('no prebuilt native binary for linux-riscv64-gnu (building from source needs cargo)');
  });

  it("names this platform as napi does (the platform packages' suffix)", () => {
    expect(napiTriple('darwin', 'arm64')).toBe('darwin-arm64');
    expect(napiTriple('win32', 'x64')).toBe('win32-x64-msvc');
    expect(napiTriple('linux', 'x64')).toMatch(/^linux-x64-(gnu|musl)$/);
  });
});
