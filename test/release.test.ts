/**
 * What the release relies on, checked without building or packing (the
 * packing is test/pack-install.test.ts): the platform packages are what
 * napi-rs derives from napi.targets, every version lines up, the version
 * script moves them all together, and the workflows name those same targets.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './helpers/servers.js';

const readJson = (rel: string) => JSON.parse(readFileSync(path.join(REPO, rel), 'utf8'));
const native = readJson('packages/native/package.json');
const platformDirs = readdirSync(path.join(REPO, 'packages/native/npm')).sort();

/** napi-rs's own mapping from a Rust target triple to its npm platform name. */
const napiCli = createRequire(path.join(REPO, 'packages/native/package.json'))('@napi-rs/cli') as {
  parseTriple(triple: string): { platformArchABI: string; platform: string; arch: string; abi: string | null };
};

const SEVEN = ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'linux-arm64-musl', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc'];

describe('release layout', () => {
  it('has one platform package per napi target, for the seven platforms, as napi create-npm-dirs makes them', () => {
    const fromTargets = native.napi.targets.map((t: string) => napiCli.parseTriple(t).platformArchABI).sort();
    expect(fromTargets).toEqual([...SEVEN].sort());
    expect(platformDirs).toEqual(fromTargets);
    for (const triple of native.napi.targets as string[]) {
      const { platformArchABI: dir, platform, arch, abi } = napiCli.parseTriple(triple);
      const m = readJson(`packages/native/npm/${dir}/package.json`);
      expect(m.name).toBe(`@respbench/native-${dir}`);
      expect(m.main).toBe(`respbench.${dir}.node`);
      expect(m.files).toEqual([`respbench.${dir}.node`]);
      expect([m.os, m.cpu], dir).toEqual([[platform], [arch]]);
      expect(m.libc, dir).toEqual(platform === 'linux' ? [abi === 'musl' ? 'musl' : 'glibc'] : undefined);
    }
  });

  it('keeps every version, the optional dependencies, the loader and Cargo at one version (scripts/version.mjs --check)', () => {
    const r = spawnSync(process.execPath, [path.join(REPO, 'scripts/version.mjs'), '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(Object.keys(native.optionalDependencies).sort()).toEqual(platformDirs.map((d) => `@respbench/native-${d}`));
  });

  it('builds and smoke-tests the same seven targets in the release workflow', () => {
    const workflow = readFileSync(path.join(REPO, '.github/workflows/release.yml'), 'utf8');
    for (const triple of native.napi.targets as string[]) {
      expect(workflow.match(new RegExp(`target: ${triple}\\b`, 'g'))?.length ?? 0, `${triple}: a build and a smoke test`).toBeGreaterThanOrEqual(2);
    }
  });

  it('strips the published binaries (linux-x64-gnu: 2.78 MB with symbols, 2.43 MB without; nobody debugs from npm)', () => {
    const workflow = readFileSync(path.join(REPO, '.github/workflows/release.yml'), 'utf8');
    // The one Build step runs every target's napi build (matrix.settings.build) with cargo told to strip.
    expect(workflow.match(/napi build/g)).toHaveLength((native.napi.targets as string[]).length);
    expect(workflow).toMatch(/- name: Build\n\s+run: \$\{\{ matrix\.settings\.build \}\}\n(?:\s+[\w-]+: .*\n)*\s+env:\n(?:\s+#.*\n)*\s+CARGO_PROFILE_RELEASE_STRIP: symbols\n/);
  });
});

describe('scripts/version.mjs', () => {
  const copies: string[] = [];
  afterAll(() => {
    for (const d of copies) rmSync(d, { recursive: true, force: true });
  });

  /** The files the script touches, copied out of the repository. */
  function copy(): string {
    const root = mkdtempSync(path.join(tmpdir(), 'respbench-version-'));
    copies.push(root);
    const files = [
      'Cargo.toml',
      'Cargo.lock',
      'packages/cli/package.json',
      'packages/report/package.json',
      'packages/native/package.json',
      'packages/native/index.js',
      'packages/native/Cargo.toml',
      ...readdirSync(path.join(REPO, 'crates'), { withFileTypes: true }).filter((d) => d.isDirectory() && existsSync(path.join(REPO, 'crates', d.name, 'Cargo.toml'))).map((d) => `crates/${d.name}/Cargo.toml`),
      ...platformDirs.map((d) => `packages/native/npm/${d}/package.json`),
    ];
    for (const f of files) {
      mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
      cpSync(path.join(REPO, f), path.join(root, f));
    }
    return root;
  }
  const version = (root: string, ...args: string[]) =>
    spawnSync(process.execPath, [path.join(REPO, 'scripts/version.mjs'), '--root', root, ...args], { encoding: 'utf8' });

  it('moves every package, the optional dependencies, the loader and the crates together', () => {
    const root = copy();
    expect(version(root, '3.4.5-rc.1').status).toBe(0);
    const r = version(root, '--check', '3.4.5-rc.1');
    expect(r.status, r.stderr).toBe(0);
    const at = (rel: string) => readFileSync(path.join(root, rel), 'utf8');
    const pkg = JSON.parse(at('packages/native/package.json'));
    expect(new Set(Object.values(pkg.optionalDependencies))).toEqual(new Set(['3.4.5-rc.1']));
    expect(at('packages/native/index.js')).not.toContain(`'${native.version}'`);
    expect(at('Cargo.lock')).toMatch(/name = "respbench-core"\nversion = "3\.4\.5-rc\.1"/);
    // Only respbench's own lines changed in the loader: same length in lines.
    expect(at('packages/native/index.js').split('\n')).toHaveLength(readFileSync(path.join(REPO, 'packages/native/index.js'), 'utf8').split('\n').length);

    expect(version(root, 'patch').status).toBe(0);
    expect(version(root, '--check', '3.4.6').status).toBe(0);
    expect(version(root, 'minor').status).toBe(0);
    expect(JSON.parse(at('packages/cli/package.json')).version).toBe('3.5.0');
  });

  it('refuses what is not a version, and --check names what disagrees', () => {
    const root = copy();
    const bad = version(root, 'v1');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('"v1" is not a version');
    const pkgFile = path.join(root, 'packages/native/npm/darwin-x64/package.json');
    const m = JSON.parse(readFileSync(pkgFile, 'utf8'));
    m.version = '9.9.9';
    writeFileSync(pkgFile, JSON.stringify(m));
    const r = version(root, '--check');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('packages/native/npm/darwin-x64/package.json: version 9.9.9');
  });
});
