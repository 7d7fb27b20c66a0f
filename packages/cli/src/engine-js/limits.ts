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
  connections: [1, 10000],
  threads: [1, 256],
} as const satisfies Record<string, readonly [number, number]>;
