/**
 * The packages as npm users get them. One packing step (pnpm pack, which
 * turns workspace:* into the exact version, of every publishable package:
 * respbench, @respbench/report, @respbench/native and its platform packages)
 * serves every check:
 *   - what each tarball holds, and that `npm publish --dry-run` accepts it;
 *   - the manifests as published: versions and optional dependencies line up,
 *     npm metadata present, no workspace: protocol left;
 *   - installed with npm outside the workspace with this machine's platform
 *     package, `npx respbench --embedded` runs the native engine with no Rust
 *     toolchain on PATH;
 *   - installed without it (npm finds no such package, as on a platform with no
 *     prebuilt binary), `--engine auto` runs the JS engine and says so once.
 * Needs a built workspace with the native binary for this machine (pnpm
 * install with cargo) and the npm registry for third-party dependencies.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from './helpers/servers.js';
import { withExtraCa } from './helpers/extra-ca.js';

interface Manifest {
  name: string;
  version: string;
  license?: string;
  repository?: { url?: string };
  homepage?: string;
  bugs?: { url?: string };
  keywords?: string[];
  engines?: { node?: string };
  files?: string[];
  os?: string[];
  cpu?: string[];
  libc?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  napi?: { targets: string[] };
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Manifest;
const nativeManifest = readJson(path.join(REPO, 'packages/native/package.json'));
const VERSION = nativeManifest.version;
const platformDirs = readdirSync(path.join(REPO, 'packages/native/npm')).sort();
const PACKAGE_DIRS = ['packages/cli', 'packages/report', 'packages/native', ...platformDirs.map((d) => `packages/native/npm/${d}`)];

/** napi-rs's name for this machine's platform package (linux-x64-gnu, darwin-arm64, win32-x64-msvc, …). */
function hostPlatform(): string {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    return `linux-${arch}-${header?.glibcVersionRuntime ? 'gnu' : 'musl'}`;
  }
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`;
}
const HOST = hostPlatform();
const binaryName = `respbench.${HOST}.node`;
const built = existsSync(path.join(REPO, 'packages/native/npm', HOST, binaryName));
if (!built && process.env.CI) throw new Error(`no native binary for ${HOST} in CI: pnpm install should have built it`);

/** Environment for npm: the user's (registry, cache, proxy, extra CAs), nothing from pnpm or vitest. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(withExtraCa(process.env))) {
    if (/^(npm_|pnpm_)/i.test(k) || k === 'NODE_PATH' || k === 'NODE_OPTIONS' || k.startsWith('VITEST') || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return env;
}

/** PATH without any directory that holds cargo or rustc: the prebuilt binary must be enough. */
function pathWithoutRust(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((d) => d && !existsSync(path.join(d, 'cargo')) && !existsSync(path.join(d, 'rustc')))
    .join(path.delimiter);
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe.skipIf(!built)('the packages as npm users get them', () => {
  let work = '';
  /** package dir (relative to the repo) -> its tarball */
  const tarballs = new Map<string, string>();
  /** package dir -> the manifest inside its tarball */
  const packed = new Map<string, Manifest>();
  /** package dir -> what npm publish would upload */
  const published = new Map<string, string[]>();
  const publishErrors: string[] = [];

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'respbench-pack-'));
    const dest = path.join(work, 'tarballs');
    mkdirSync(dest);
    const env = npmEnv();
    await Promise.all(
      PACKAGE_DIRS.map(async (dir) => {
        const r = await run('pnpm', ['pack', '--pack-destination', dest, '--json'], path.join(REPO, dir), env);
        if (r.status !== 0) throw new Error(`pnpm pack in ${dir} failed: ${r.stderr}`);
        const tgz = (JSON.parse(r.stdout.slice(r.stdout.search(/^\{/m))) as { filename: string }).filename; // after any prepack output
        tarballs.set(dir, tgz);
        packed.set(dir, JSON.parse(spawnSync('tar', ['-xzOf', tgz, 'package/package.json'], { encoding: 'utf8' }).stdout));
      }),
    );
    await Promise.all(
      PACKAGE_DIRS.map(async (dir) => {
        const r = await run('npm', ['publish', '--dry-run', '--json', tarballs.get(dir)!], work, env);
        if (r.status !== 0) {
          publishErrors.push(`${dir}: ${r.stderr.trim()}`);
          return;
        }
        const out = JSON.parse(r.stdout.slice(r.stdout.search(/^\{/m))) as { files: { path: string }[] } | Record<string, { files: { path: string }[] }>;
        const files = 'files' in out ? (out.files as { path: string }[]) : Object.values(out)[0].files;
        published.set(dir, files.map((f) => f.path).sort());
      }),
    );
  }, 240_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('every package passes npm publish --dry-run and ships what it should, with a LICENSE', () => {
    expect(publishErrors).toEqual([]);
    // Files, subfolders' too (examples/kubernetes/…), as npm lists them.
    const examples = (readdirSync(path.join(REPO, 'examples'), { recursive: true }) as string[])
      .filter((f) => statSync(path.join(REPO, 'examples', f)).isFile())
      .map((f) => `examples/${f}`)
      .sort();

    const cli = published.get('packages/cli')!;
    expect(cli.filter((f) => !/^(dist|bundle|src|examples)\//.test(f))).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(cli.filter((f) => f.startsWith('examples/'))).toEqual(examples);
    expect(cli).toEqual(expect.arrayContaining(['bundle/bin.js', 'bundle/cli.js', 'bundle/cli.cache', 'bundle/package.json', 'bundle/merge-worker.js', 'dist/bin.js', 'dist/index.js', 'dist/index.d.ts']));
    expect(cli).not.toContain('bundle/meta.json');
    expect(cli.filter((f) => /\.test\.|tsbuildinfo/.test(f))).toEqual([]);

    const report = published.get('packages/report')!;
    expect(report.filter((f) => !/^(dist|src)\//.test(f))).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(report).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts']));

    expect(published.get('packages/native')).toEqual(['LICENSE', 'README.md', 'index.d.ts', 'index.js', 'package.json']);
    for (const dir of platformDirs) {
      const extra = dir === HOST ? [binaryName] : [];
      expect(published.get(`packages/native/npm/${dir}`), dir).toEqual(['LICENSE', 'README.md', 'package.json', ...extra].sort());
    }
    const license = readFileSync(path.join(REPO, 'LICENSE'), 'utf8');
    for (const dir of PACKAGE_DIRS) expect(readFileSync(path.join(REPO, dir, 'LICENSE'), 'utf8'), dir).toBe(license);
  });

  it('ships no source map whose sources it lacks', () => {
    for (const dir of ['packages/cli', 'packages/report']) {
      const files = new Set(published.get(dir));
      const maps = [...files].filter((f) => f.endsWith('.map'));
      expect(maps.length, dir).toBeGreaterThan(0);
      for (const map of maps) {
        const { sources } = JSON.parse(readFileSync(path.join(REPO, dir, map), 'utf8')) as { sources: string[] };
        for (const src of sources) expect(files.has(path.posix.join(path.posix.dirname(map), src)), `${dir}/${map} -> ${src}`).toBe(true);
      }
    }
  });

  it('publishes one version everywhere: the platform packages are @respbench/native optional dependencies at that version', () => {
    const targets = nativeManifest.napi!.targets;
    expect(platformDirs).toHaveLength(targets.length);
    const platformNames = platformDirs.map((d) => packed.get(`packages/native/npm/${d}`)!.name).sort();
    expect(platformNames).toEqual(platformDirs.map((d) => `@respbench/native-${d}`).sort());
    for (const [dir, m] of packed) {
      expect(m.version, dir).toBe(VERSION);
      expect(JSON.stringify(m), dir).not.toContain('workspace:');
      expect(m.license, dir).toBe('MIT');
      expect(m.repository?.url, dir).toMatch(/^git\+https:\/\/github\.com\//);
      expect(m.homepage && m.bugs?.url && m.keywords?.length && m.engines?.node, `${dir}: homepage, bugs, keywords, engines`).toBeTruthy();
    }
    const native = packed.get('packages/native')!;
    expect(Object.keys(native.optionalDependencies ?? {}).sort()).toEqual(platformNames);
    expect(new Set(Object.values(native.optionalDependencies ?? {}))).toEqual(new Set([VERSION]));
    const cli = packed.get('packages/cli')!;
    expect(cli.dependencies?.['@respbench/native']).toBe(VERSION);
    expect(cli.dependencies?.['@respbench/report']).toBe(VERSION);
    for (const dir of platformDirs) {
      const m = packed.get(`packages/native/npm/${dir}`)!;
      const [os, cpu, abi] = dir.split('-');
      expect([m.os, m.cpu], dir).toEqual([[os], [cpu]]);
      if (os === 'linux') expect(m.libc, dir).toEqual([abi === 'musl' ? 'musl' : 'glibc']);
    }
  });

  /** npm-installs the given tarballs into a fresh directory outside the workspace. */
  async function install(name: string, dirs: string[]): Promise<string> {
    const app = path.join(work, name);
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `respbench-${name}`, version: '0.0.0', private: true }));
    const r = await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...dirs.map((d) => tarballs.get(d)!)], app, npmEnv());
    expect(r.status, `npm install: ${r.stderr}`).toBe(0);
    return app;
  }

  /** respbench as a user runs it: through npx, no Rust on PATH, a home of its own. */
  function respbench(app: string, home: string, args: string[]) {
    const env: NodeJS.ProcessEnv = { ...npmEnv(), PATH: pathWithoutRust(), HOME: home, npm_config_update_notifier: 'false' };
    delete env.XDG_CACHE_HOME;
    return run('npx', ['--no-install', 'respbench', ...args], app, env);
  }

  it(`installed with npm and its ${HOST} package, runs the native engine without cargo`, async () => {
    expect(spawnSync('sh', ['-c', 'command -v cargo'], { env: { PATH: pathWithoutRust() } }).status).not.toBe(0);
    const app = await install('with-binary', ['packages/cli', 'packages/report', 'packages/native', `packages/native/npm/${HOST}`]);
    expect(existsSync(path.join(app, 'node_modules/@respbench', `native-${HOST}`, binaryName))).toBe(true);
    expect(readdirSync(path.join(app, 'node_modules/@respbench')).filter((d) => d.startsWith('native-'))).toEqual([`native-${HOST}`]);
    expect(readdirSync(path.join(app, 'node_modules/respbench/examples')).sort()).toEqual(readdirSync(path.join(REPO, 'examples')).sort());

    const home = path.join(work, 'home-native');
    mkdirSync(home);
    const r = await respbench(app, home, ['--engine', 'native', '--embedded', '--requests', '20000', '--json', '-q']);
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { engine: string; requests: number; failure: unknown };
    expect([result.engine, result.requests, result.failure]).toEqual(['native', 20000, null]);
    expect(r.stderr).toBe('');

    // --version from the installed package: its own version, and the native engine loading.
    const v = await respbench(app, home, ['--version']);
    expect(v.status, v.stderr).toBe(0);
    const version = (JSON.parse(readFileSync(path.join(REPO, 'packages/cli/package.json'), 'utf8')) as { version: string }).version;
    expect(v.stdout).toContain(version);
    expect(v.stdout).toMatch(/native/);
  }, 180_000);

  it('installed without a package for this platform, falls back to the JS engine and says so once', async () => {
    const app = await install('without-binary', ['packages/cli', 'packages/report', 'packages/native']);
    expect(readdirSync(path.join(app, 'node_modules/@respbench')).filter((d) => d.startsWith('native-'))).toEqual([]);

    const home = path.join(work, 'home-fallback');
    mkdirSync(home);
    const args = ['--embedded', '--requests', '20000', '--json', '-q'];
    const first = await respbench(app, home, args);
    expect(first.status, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as { engine: string }).engine).toBe('js');
    const lines = first.stderr.split('\n').filter(Boolean);
    expect(lines, first.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^respbench: using the JS engine \(native engine unavailable: .+\); pass --engine js to choose it and silence this notice, which is shown once$/);
    // The optional dependency left out: the fix is to install it, not cargo.
    expect(lines[0]).toContain(`npm i @respbench/native-${HOST}`);
    expect(lines[0]).not.toContain('cargo');

    const second = await respbench(app, home, args);
    expect(second.status, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as { engine: string }).engine).toBe('js');
    expect(second.stderr).toBe('');
  }, 180_000);
});
