/**
 * The build `--baseline <rev>` compares against: that revision checked out in
 * a temporary git worktree and built there with `pnpm install
 * --frozen-lockfile` (TypeScript and the Rust addon, both engines). The build
 * is kept per resolved commit under the OS temp directory
 * (respbench-perf-baseline/<commit>), so a second run against the same
 * revision starts at once; the worktree's registration is removed as soon as
 * the build is done (the repository's `git worktree list` is left as it was),
 * and a build that fails or is interrupted is removed whole.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onInterrupt, run } from './processes.mjs';

/** Written last: a directory without it is a build that did not finish. */
const BUILT_MARKER = '.respbench-perf-built';

function git(repo, args) {
  return spawnSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
}

/** The full commit `rev` names in `repo`, or null when it names none. */
export function resolveCommit(repo, rev) {
  const r = git(repo, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]);
  return r.status === 0 ? r.stdout.trim() : null;
}

/**
 * The baseline's CLI (of `commit` built: packages/cli/bundle/bin.js, its bin
 * since the CLI is bundled, else dist/bin.js), building it first unless a
 * finished build of that commit is cached.
 */
export async function baselineBuild(repo, commit, say) {
  const root = path.join(tmpdir(), 'respbench-perf-baseline');
  const dir = path.join(root, commit);
  const binIn = (folder) => path.join(dir, 'packages', 'cli', folder, 'bin.js');
  const binOf = () => (existsSync(binIn('bundle')) ? binIn('bundle') : binIn('dist'));
  if (existsSync(path.join(dir, BUILT_MARKER))) {
    say(`baseline ${commit.slice(0, 12)}: reusing the build in ${dir}`);
    return binOf();
  }
  mkdirSync(root, { recursive: true });
  const log = path.join(root, `${commit}.log`);
  // Only this worktree's registration: `git worktree prune` would touch others' too.
  const unregister = () => {
    const dotGit = path.join(dir, '.git');
    if (!existsSync(dotGit)) return;
    const admin = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1];
    if (admin) rmSync(path.resolve(dir, admin.trim()), { recursive: true, force: true });
    rmSync(dotGit, { force: true });
  };
  const remove = () => {
    unregister();
    rmSync(dir, { recursive: true, force: true });
  };
  remove();
  const forget = onInterrupt(remove);
  try {
    const add = git(repo, ['worktree', 'add', '--detach', dir, commit]);
    if (add.status !== 0) throw new Error(`git worktree add ${commit} failed: ${add.stderr.trim()}`);
    say(`baseline ${commit.slice(0, 12)}: building it in ${dir} (pnpm install --frozen-lockfile; a few minutes; output in ${log})`);
    const started = Date.now();
    const built = await run('pnpm', ['install', '--frozen-lockfile'], { cwd: dir, env: { ...process.env, CI: '1' } });
    writeFileSync(log, `${built.out}${built.err}`);
    if (built.code !== 0) throw new Error(`building the baseline failed (pnpm install exit ${built.code}); see ${log}`);
    const cli = binOf();
    if (!existsSync(cli)) throw new Error(`the baseline build made no ${path.relative(dir, cli)}; see ${log}`);
    // The files stay (the cache); the repository forgets the worktree.
    unregister();
    writeFileSync(path.join(dir, BUILT_MARKER), `${commit}\n`);
    say(`baseline ${commit.slice(0, 12)}: built in ${Math.round((Date.now() - started) / 1000)} s`);
    return cli;
  } catch (err) {
    remove();
    throw err;
  } finally {
    forget();
  }
}
