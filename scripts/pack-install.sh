#!/usr/bin/env bash
# Packs the four publishable packages (respbench, @respbench/report,
# @respbench/native, @respbench/native-linux-x64-gnu), installs the tarballs
# with npm into an empty directory outside the workspace, and checks what a
# user would see:
#   1. with no Rust toolchain on PATH, `respbench --engine native --embedded`
#      runs on the prebuilt binary from the platform package;
#   2. with the platform package removed, `--engine auto` falls back to the JS
#      engine and says so in one line on stderr.
# Needs a built workspace (pnpm install) and the npm registry for third-party
# dependencies. Prints "pack-install: ok" at the end; exits non-zero on any failure.
set -euo pipefail

# As a user's shell: nothing from a calling package manager or test runner
# (NODE_PATH from pnpm/npx would reach the workspace's own node_modules).
unset NODE_PATH
for v in $(compgen -e | grep -iE '^(npm_|pnpm_)' || true); do unset "$v"; done

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/respbench-pack-XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "pack-install: $*" >&2; exit 1; }

binary="$repo/packages/native/npm/linux-x64-gnu/respbench.linux-x64-gnu.node"
[ -f "$binary" ] || fail "no native binary at packages/native/npm/linux-x64-gnu (run pnpm install with cargo on PATH)"
[ -f "$repo/packages/cli/dist/bin.js" ] || fail "packages/cli is not built (run pnpm install)"

mkdir -p "$work/tarballs" "$work/app"
for pkg in packages/cli packages/report packages/native packages/native/npm/linux-x64-gnu; do
  (cd "$repo/$pkg" && pnpm pack --pack-destination "$work/tarballs" >/dev/null) || fail "pnpm pack failed in $pkg"
done
ls "$work/tarballs"

cd "$work/app"
echo '{ "name": "respbench-pack-check", "version": "0.0.0", "private": true }' > package.json
npm install --no-audit --no-fund --loglevel=error "$work"/tarballs/*.tgz >/dev/null || fail "npm install of the tarballs failed"
[ -f node_modules/@respbench/native-linux-x64-gnu/respbench.linux-x64-gnu.node ] || fail "the platform package did not bring its binary"
[ ! -e node_modules/@respbench/native/respbench.linux-x64-gnu.node ] || fail "@respbench/native must not ship a binary itself"

# PATH without any directory that holds cargo or rustc: the binary must be enough.
clean_path=""
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  if [ -e "$d/cargo" ] || [ -e "$d/rustc" ]; then continue; fi
  clean_path="${clean_path:+$clean_path:}$d"
done
PATH="$clean_path" command -v cargo >/dev/null 2>&1 && fail "cargo is still on the stripped PATH"

run() { env -i PATH="$clean_path" HOME="$work" node node_modules/respbench/dist/bin.js "$@"; }

out="$(run --engine native --embedded --requests 20000 --json -q 2>"$work/native.err")" || fail "native run failed: $(cat "$work/native.err")"
node -e '
  const r = JSON.parse(process.argv[1]);
  if (r.engine !== "native" || r.requests !== 20000 || r.failure !== null) {
    console.error("unexpected native result:", JSON.stringify({ engine: r.engine, requests: r.requests, failure: r.failure }));
    process.exit(1);
  }
  console.log(`native engine from the tarballs: ${r.requests} requests, ${Math.round(r.opsPerSec)} ops/s`);
' "$out" || fail "the native run did not do what was asked"

rm -rf node_modules/@respbench/native-linux-x64-gnu
out="$(run --engine auto --embedded --requests 20000 --json -q 2>"$work/auto.err")" || fail "auto run failed: $(cat "$work/auto.err")"
node -e '
  const r = JSON.parse(process.argv[1]);
  if (r.engine !== "js" || r.requests !== 20000 || r.failure !== null) {
    console.error("unexpected fallback result:", JSON.stringify({ engine: r.engine, requests: r.requests, failure: r.failure }));
    process.exit(1);
  }
' "$out" || fail "--engine auto did not fall back to the JS engine"
[ "$(grep -c . "$work/auto.err")" = 1 ] || fail "expected one line on stderr, got: $(cat "$work/auto.err")"
grep -q '^respbench: using the JS engine (native engine unavailable: ' "$work/auto.err" || fail "no fallback notice: $(cat "$work/auto.err")"
echo "fallback notice: $(cat "$work/auto.err")"
echo "pack-install: ok"
