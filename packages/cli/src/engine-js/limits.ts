/**
 * The limits of every numeric run flag, one table for both engines. The Rust
 * crate has the same table (`limits.rs`); both are checked against
 * `test/vectors/limits.json`.
 */
export const LIMITS = {
  port: [1, 65535],
  requests: [1, 2 ** 40],
  pipeline: [1, 65536],
  keyspace: [1, 2 ** 48],
  valueSize: [1, 64 * 1024 * 1024],
  setRatio: [0, 100],
  seed: [0, 4294967295],
  valueGeneration: [0, 4294967295],
  connections: [1, 10000],
  threads: [1, 256],
  /**
   * Bytes of values one connection may have in flight: pipeline × the
   * largest value size (see windowRefusal).
   */
  windowBytes: [1, 1024 * 1024 * 1024],
} as const satisfies Record<string, readonly [number, number]>;

/**
 * Why a plan's window cannot fit, or null. A connection keeps `pipeline`
 * requests in flight, so the server may have to hold a window of requests or
 * replies for it (a GET window's replies sit in the server's output buffer
 * while the client reads); the engines themselves hold at most one write per
 * connection. Both engines refuse the same plans with this text (the Rust
 * crate's `limits::window_refusal`).
 */
export function windowRefusal(plan: { pipeline: number; valueSizeMax: number }): string | null {
  const bytes = plan.pipeline * plan.valueSizeMax;
  const max = LIMITS.windowBytes[1];
  if (bytes <= max) return null;
  return `pipeline × valueSizeMax is ${plan.pipeline} × ${plan.valueSizeMax} = ${bytes} bytes in flight per connection, more than windowBytes ${max} (1 GiB)`;
}

