/**
 * The packages as a user gets them: scripts/pack-install.sh packs the four
 * packages, npm-installs the tarballs into an empty directory, runs the
 * native engine with no Rust toolchain on PATH, then removes the platform
 * package and checks --engine auto falls back to JS with one notice line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/servers.js';

const binary = path.join(REPO, 'packages/native/npm/linux-x64-gnu/respbench.linux-x64-gnu.node');
const built = existsSync(binary);
if (!built && process.env.CI) throw new Error('no native binary in CI: pnpm install should have built it');

describe.skipIf(!built)('packed and installed with npm', () => {
  it('runs the native engine from the tarballs without cargo, and falls back to JS without the platform package', () => {
    const r = spawnSync('bash', [path.join(REPO, 'scripts/pack-install.sh')], { encoding: 'utf8', timeout: 300_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('native engine from the tarballs: 20000 requests');
    expect(r.stdout).toContain('fallback notice: respbench: using the JS engine (native engine unavailable:');
    expect(r.stdout).toMatch(/pack-install: ok\s*$/);
  }, 300_000);
});
