#!/usr/bin/env python3
"""An independent reading of Redis Cluster's key hash slot (the cluster
specification: CRC16-CCITT/XMODEM of the key, or of its first non-empty
{hashtag}, modulo 16384) that writes the shared vectors
test/vectors/slots.json. The TypeScript (engine-js/slot.ts) and Rust
(slot.rs) engines check themselves against it, and test/cluster.test.ts
checks a sample against a real server's CLUSTER KEYSLOT.

Run: python3 test/vectors/slots.py > test/vectors/slots.json
"""
import json


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key):
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % 16384


KEYS = [
    "", "a", "foo", "bar", "key:0", "key:1", "key:999999", "memtier-1", "123456789",
    "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}",
    "{}", "{}x", "x{}", "{", "}", "}{", "a{b", "a}b{c}", "{a}{b}", "{{}}", "{{a}}", "a{b}c{d}e",
    "bench:{tag}:1", "bench:{tag}:2", "{tag}", "tag",
    "ключ", "{ключ}:1", "キー", "😀", "{😀}x", "é{é}", "café",
]
KEYS += ["key:%d" % i for i in (2, 3, 10, 100, 12345, 2 ** 40)]


def main():
    vectors = {
        "crc16": [["123456789", crc16(b"123456789")], ["", 0], ["a", crc16(b"a")]],
        "slots": [[k, key_slot(k.encode("utf-8"))] for k in KEYS],
    }
    rows = lambda name: ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in vectors[name])
    print('{\n "crc16": [\n%s\n ],\n "slots": [\n%s\n ]\n}' % (rows("crc16"), rows("slots")))


# generate.py imports key_slot from here.
if __name__ == "__main__":
    main()
