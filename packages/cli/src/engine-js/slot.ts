/**
 * Redis Cluster's key hash slot: CRC16 (CCITT/XMODEM: polynomial 0x1021,
 * initial 0) of the key, or of the bytes between its first `{` and the first
 * `}` after it when there are any (a `{hashtag}`), modulo 16384. Pinned by
 * test/vectors/slots.json (written by test/vectors/slots.py). Paired with
 * crates/respbench-core/src/slot.rs.
 */

/** Slots of a Redis Cluster. */
export const SLOTS = 16384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

/** CRC16-XMODEM of `len` bytes of `buf` from `start`. */
export function crc16(buf: Uint8Array, start: number, len: number): number {
  let crc = 0;
  for (let i = start; i < start + len; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ buf[i]) & 0xff];
  return crc;
}

/** The hash slot of the key in `len` bytes of `buf` from `start`, {hashtag} rules applied. */
export function keySlot(buf: Uint8Array, start: number, len: number): number {
  const end = start + len;
  for (let i = start; i < end; i++) {
    if (buf[i] !== 0x7b) continue; // '{'
    for (let j = i + 1; j < end; j++) {
      if (buf[j] !== 0x7d) continue; // '}'
      // An empty tag ("{}") hashes the whole key.
      if (j > i + 1) return crc16(buf, i + 1, j - i - 1) & (SLOTS - 1);
      break;
    }
    break;
  }
  return crc16(buf, start, len) & (SLOTS - 1);
}
