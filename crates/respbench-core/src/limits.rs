//! The one table of what a Plan may ask for. The CLI's validation
//! (`packages/cli/src/engine-js/limits.ts`), this crate's [`crate::plan::Plan::check`] and the
//! napi binding all take their bounds from a table with these numbers, and
//! `test/vectors/limits.json` pins both languages' tables to the same ones.

/// An inclusive range of whole numbers a Plan field may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The field as the TypeScript `Plan` and `limits.json` spell it.
    pub name: &'static str,
    pub min: u64,
    pub max: u64,
}

impl Limit {
    pub const fn contains(&self, value: u64) -> bool {
        self.min <= value && value <= self.max
    }
}

pub const PORT: Limit = Limit { name: "port", min: 1, max: 65535 };
pub const REQUESTS: Limit = Limit { name: "requests", min: 1, max: 1 << 40 };
pub const PIPELINE: Limit = Limit { name: "pipeline", min: 1, max: 65536 };
pub const KEYSPACE: Limit = Limit { name: "keyspace", min: 1, max: 1 << 48 };
/// Bytes of one value: both ends of a `--value-size` range.
pub const VALUE_SIZE: Limit = Limit { name: "valueSize", min: 1, max: 64 * 1024 * 1024 };
/// Percentage of writes in mixed mode.
pub const SET_RATIO: Limit = Limit { name: "setRatio", min: 0, max: 100 };
pub const SEED: Limit = Limit { name: "seed", min: 0, max: u32::MAX as u64 };
/// `--value-generation`: any u32 (it is mixed into the value's hash, [`crate::values::content_hash`]).
pub const VALUE_GENERATION: Limit = Limit { name: "valueGeneration", min: 0, max: u32::MAX as u64 };
pub const CONNECTIONS: Limit = Limit { name: "connections", min: 1, max: 10_000 };
pub const THREADS: Limit = Limit { name: "threads", min: 1, max: 256 };
/// Bytes of values one connection may have in flight: pipeline × the largest
/// value size (see [`window_refusal`]).
pub const WINDOW_BYTES: Limit = Limit { name: "windowBytes", min: 1, max: 1 << 30 };

/// Every limit (`limits.json` holds the same, keyed by name).
pub const ALL: [Limit; 11] = [
    PORT,
    REQUESTS,
    PIPELINE,
    KEYSPACE,
    VALUE_SIZE,
    SET_RATIO,
    SEED,
    VALUE_GENERATION,
    CONNECTIONS,
    THREADS,
    WINDOW_BYTES,
];

/// Why a window of `pipeline` requests with values up to `value_size_max`
/// bytes cannot fit, or None. A connection keeps `pipeline` requests in
/// flight, so the server may have to hold a window of requests or replies for
/// it (a GET window's replies sit in its output buffer while the client
/// reads); the engine itself holds at most one write per connection. Worded
/// as the TS engine's `windowRefusal`, so both refuse the same plans alike.
pub fn window_refusal(pipeline: u64, value_size_max: u64) -> Option<String> {
    let bytes = pipeline.saturating_mul(value_size_max);
    let max = WINDOW_BYTES.max;
    (bytes > max).then(|| {
        format!(
            "pipeline × valueSizeMax is {pipeline} × {value_size_max} = {bytes} bytes in flight per connection, more than windowBytes {max} (1 GiB)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_test_vectors_limits_json() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../test/vectors/limits.json");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let json: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).expect("valid JSON");
        let mut from_json: Vec<(String, u64, u64)> = json
            .iter()
            .map(|(name, range)| {
                let bound = |i: usize| range[i].as_u64().unwrap_or_else(|| panic!("{name}[{i}] is not a whole number"));
                (name.clone(), bound(0), bound(1))
            })
            .collect();
        let mut from_table: Vec<(String, u64, u64)> = ALL.iter().map(|l| (l.name.to_string(), l.min, l.max)).collect();
        from_json.sort();
        from_table.sort();
        assert_eq!(from_table, from_json);
    }

    #[test]
    fn a_window_fits_up_to_window_bytes_and_not_one_byte_more() {
        assert_eq!(window_refusal(1024, 1 << 20), None);
        assert_eq!(window_refusal(65536, 16 * 1024), None);
        let text = window_refusal(65536, 64 << 20).expect("refused");
        assert!(text.contains("65536 × 67108864 = 4398046511104 bytes"), "{text}");
        assert!(window_refusal(1, (1 << 30) + 1).is_some());
    }
}
