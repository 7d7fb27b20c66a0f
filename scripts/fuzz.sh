#!/usr/bin/env bash
# Fuzz the Rust reply scanner, template parser and topology parser with cargo-fuzz (libFuzzer).
#   scripts/fuzz.sh [seconds per target, default 60]
#   FUZZ_FORK=2 scripts/fuzz.sh 300     # libFuzzer's fork mode: N processes at once
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`); when
# either is missing it says so and exits 0, so CI on a machine without them
# still passes (the parsers' own tests and property tests still run).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-60}"
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz: skipped (no nightly Rust toolchain on this machine)"
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: skipped (cargo-fuzz is not installed: cargo install cargo-fuzz)"
  exit 0
fi
mkdir -p corpus/reply_scanner corpus/template_parser corpus/topology
# Seeds: a few well-formed replies and templates.
printf '+OK\r\n' > corpus/reply_scanner/simple
printf '\x03$5\r\nhello\r\n*2\r\n:1\r\n$-1\r\n' > corpus/reply_scanner/mixed
printf '\x01%%1\r\n+a\r\n|1\r\n+k\r\n+v\r\n_\r\n' > corpus/reply_scanner/resp3
printf 'HSET __key__ field __data__' > corpus/template_parser/hset
printf 'SET user:__rand_int__ __key__ __data__' > corpus/template_parser/mixed
printf '%s' "HSET \"k:__key__\" \"f \\x41\\\"\" 'it\\'s' __data__" > corpus/template_parser/quoted
# The topology parser starts from redis 7.0's own CLUSTER SHARDS / SLOTS replies.
cp ../crates/respbench-core/tests/fixtures/topology/*.bin corpus/topology/
for target in reply_scanner template_parser topology; do
  log=$(mktemp)
  fork=()
  if [ -n "${FUZZ_FORK:-}" ]; then fork=(-fork="$FUZZ_FORK"); fi
  cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$seconds" -print_final_stats=1 "${fork[@]}" >"$log" 2>&1 || {
    tail -40 "$log"
    echo "fuzz: $target FAILED (crash input saved under fuzz/artifacts/$target)"
    exit 1
  }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  # Fork mode reports progress lines "#N: cov: …" instead of final stats.
  [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1 || true)
  [ -n "$runs" ] || runs='?'
  echo "fuzz: $target ok, $runs executions in ${seconds}s, no crash"
  rm -f "$log"
done
