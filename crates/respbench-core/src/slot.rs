//! Redis Cluster's key hash slot: CRC16 (CCITT/XMODEM: polynomial 0x1021,
//! initial 0) of the key, or of the bytes between its first `{` and the
//! first `}` after it when there are any (a `{hashtag}`), modulo 16384.
//! Pinned by `test/vectors/slots.json` (written by `test/vectors/slots.py`).
//! Paired with `packages/cli/src/engine-js/slot.ts`.

/// Slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;

const TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut b = 0;
        while b < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            b += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

/// CRC16-XMODEM of `data`.
#[inline]
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc = (crc << 8) ^ TABLE[((crc >> 8) as u8 ^ b) as usize];
    }
    crc
}

/// The hash slot of `key`, {hashtag} rules applied.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            // An empty tag ("{}") hashes the whole key.
            if len > 0 {
                return crc16(&key[open + 1..open + 1 + len]) & (SLOTS - 1);
            }
        }
    }
    crc16(key) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `["key", n]` rows of one array of the shared vectors.
    fn rows(name: &str) -> Vec<(String, u16)> {
        let v: serde_json::Value = serde_json::from_str(include_str!("../../../test/vectors/slots.json")).unwrap();
        v[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r[0].as_str().unwrap().to_string(), r[1].as_u64().unwrap() as u16))
            .collect()
    }

    #[test]
    fn crc16_matches_the_shared_vectors() {
        let v = rows("crc16");
        assert!(!v.is_empty());
        for (data, crc) in v {
            assert_eq!(crc16(data.as_bytes()), crc, "{data}");
        }
    }

    #[test]
    fn key_slots_match_the_shared_vectors() {
        let v = rows("slots");
        assert!(v.len() > 30);
        for (key, slot) in v {
            assert_eq!(key_slot(key.as_bytes()), slot, "{key}");
        }
    }
}
