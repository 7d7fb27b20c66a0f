#!/usr/bin/env python3
"""An independent implementation of docs/workload.md that writes the shared
test vectors (test/vectors/workload.json). The TypeScript and Rust engines
check themselves against its output, so a mistake in either shows as a
disagreement with this third reading of the spec.

Run: python3 test/vectors/generate.py > test/vectors/workload.json
"""
import json
import math
import re
import struct

from slots import key_slot

M32 = 0xFFFFFFFF
ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def fmix32(x):
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & M32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & M32
    x ^= x >> 16
    return x


def fnv1a32(data):
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & M32
    return h


def rotl(x, k):
    return ((x << k) | (x >> (32 - k))) & M32


class Stream:
    def __init__(self, seed, connection):
        sm = fmix32((seed ^ ((connection * 0x85EBCA77) & M32)) & M32)
        s = []
        for _ in range(4):
            sm = (sm + 0x9E3779B9) & M32
            s.append(fmix32(sm))
        if s == [0, 0, 0, 0]:
            s[0] = 1
        self.s = s

    def u32(self):
        s = self.s
        result = (rotl((s[1] * 5) & M32, 7) * 9) & M32
        t = (s[1] << 9) & M32
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 11)
        return result

    def u53(self):
        hi = self.u32() >> 5
        lo = self.u32() >> 6
        return hi * (1 << 26) + lo


_fill = None


def fill(length):
    global _fill
    if _fill is None or len(_fill) < length:
        st = Stream(0x5EEDF111, 0)
        _fill = bytes(ALPHABET[st.u32() % 62] for _ in range(length))
    return _fill


def value_size(h, lo, hi):
    return lo if lo == hi else lo + fmix32(h) % (hi - lo + 1)


GENERATION_MIX = 0x9E3779B1


def value(key, lo, hi, generation=0):
    # The size is the key's; the bytes derive from the key's hash with the
    # generation mixed in (docs/workload.md, "Values"; generation 0: the hash itself).
    h = fnv1a32(key)
    size = value_size(h, lo, hi)
    h = h ^ ((generation * GENERATION_MIX) & M32)
    head = b"%08x" % h
    out = bytearray(head[: min(size, 8)])
    table = fill(hi + 64)
    off = h >> 26
    for i in range(8, size):
        out.append(table[off + i])
    return bytes(out)


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def det_log2(a):
    bits = struct.unpack("<Q", struct.pack("<d", a))[0]
    e = ((bits >> 52) & 0x7FF) - 1023
    m = struct.unpack("<d", struct.pack("<Q", (bits & ~(0x7FF << 52)) | (1023 << 52)))[0]
    if m > 1.4142135623730951:
        m = m / 2
        e = e + 1
    t = (m - 1) / (m + 1)
    t2 = t * t
    acc = 1 / 15
    for k in (13, 11, 9, 7, 5, 3, 1):
        acc = 1 / k + t2 * acc
    return e + 2 * t * acc * 1.4426950408889634


def det_exp2(y):
    k = math.floor(y)
    f = (y - k) * 0.6931471805599453
    acc = 1.0
    for j in range(16, 0, -1):
        acc = 1 + (f / j) * acc
    return acc * struct.unpack("<d", struct.pack("<Q", (k + 1023) << 52))[0]


def det_pow(a, b):
    return det_exp2(b * det_log2(a))


class KeyChooser:
    def __init__(self, pattern, keyspace, connection, connections, stddev=None, zipf=0.99):
        self.pattern = pattern
        self.n = keyspace
        self.i = 0
        self.start = connection * ((keyspace - keyspace % connections) // connections)
        self.median = keyspace / 2
        self.stddev = keyspace / 6 if stddev is None else stddev
        self.s = zipf
        if zipf != 1:
            self.zipf_scale = det_pow(keyspace + 1, 1 - zipf) - 1

    def next(self, st):
        n = self.n
        if self.pattern == "uniform":
            return st.u53() % n
        if self.pattern == "sequential":
            idx = (self.start + self.i) % n
            self.i += 1
            return idx
        if self.pattern == "gaussian":
            total = 0
            for _ in range(12):
                total += st.u32()
            z = total / 4294967296 - 6
            idx = math.floor(self.median + self.stddev * z)
            return 0 if idx < 0 else (n - 1 if idx > n - 1 else idx)
        u = st.u53() / 9007199254740992
        if self.s == 1:
            x = det_pow(n + 1, u)
        else:
            x = det_pow(u * self.zipf_scale + 1, 1 / (1 - self.s))
        idx = math.floor(x) - 1
        return n - 1 if idx > n - 1 else (0 if idx < 0 else idx)


def requests_for(total, conns, c):
    return total // conns + (1 if c < total % conns else 0)


def draws(seed, connection, mode, set_ratio, keyspace, count):
    st = Stream(seed, connection)
    ops = []
    for _ in range(count):
        if mode == "mixed":
            is_set = st.u32() % 100 < set_ratio
        else:
            is_set = mode == "set"
        ops.append(["set" if is_set else "get", st.u53() % keyspace])
    return ops


# ---- Command mixes (docs/workload.md, "Command mixes") ----

WRITE_NAMES = ["SET", "SETNX", "GETSET", "APPEND"]


def mix_role(text):
    words = text.strip(" \t").replace("\t", " ").split(" ")
    return "set" if words[0].upper() in WRITE_NAMES else "get"


def key_count(args):
    """Keys a request of the template names: the arguments holding __key__ when two or more do, else 1."""
    n = sum(1 for arg in args if any(k == "__key__" for k, _ in arg))
    return n if n >= 2 else 1


def encode_template(args, prefix, indexes, lo, hi, rand_ints=None):
    """One request of a parsed template for keys `indexes` (docs/workload.md, "Multi-key commands");
    `rand_ints` (a Stream and the keyspace) draws each __rand_int__ in argument order."""
    keys = [prefix + str(i).encode() for i in indexes]
    multi = len(keys) > 1
    current = -1
    out = []
    for arg in args:
        if multi and any(k == "__key__" for k, _ in arg):
            current += 1
        slot = max(current, 0) if multi else 0
        b = b""
        for kind, lit in arg:
            if kind == "lit":
                b += lit
            elif kind == "__key__":
                b += keys[slot]
            elif kind == "__tag__":
                b += str(indexes[0]).encode()
            elif kind == "__rand_int__":
                stream, keyspace = rand_ints
                b += b"%012d" % (stream.u53() % keyspace)
            else:
                b += value(keys[slot], lo, hi)
        out.append(b)
    return encode(out)


def routing_slot(args, prefix, index):
    """--cluster: the slot a request goes by (docs/cluster.md): its key argument's (the first holding __key__
    or __tag__) up to its first __data__ or __rand_int__; a command with no key, fmix32 of its key draw's."""
    for arg in args:
        if any(k in ("__key__", "__tag__") for k, _ in arg):
            b = b""
            for kind, lit in arg:
                if kind == "lit":
                    b += lit
                elif kind == "__key__":
                    b += prefix + str(index).encode()
                elif kind == "__tag__":
                    b += str(index).encode()
                else:
                    break
            return key_slot(b)
    return fmix32(index & M32) % 16384


def mix_requests(seed, connection, connections, keyspace, prefix, lo, hi, commands, count, key_pattern="uniform"):
    """[command index, bytes] of a connection's first `count` requests of a mix."""
    st = Stream(seed, connection)
    run_chooser = KeyChooser(key_pattern, keyspace, connection, connections)
    choosers = [KeyChooser(c["keyPattern"], keyspace, connection, connections) if c["keyPattern"] else run_chooser
                for c in commands]
    parsed = [parse_template(c["template"], mix_role(c["template"]), key_optional=True) for c in commands]
    total = sum(c["weight"] for c in commands)
    out = []
    for _ in range(count):
        i = 0
        if len(commands) > 1:
            x = st.u32() % total
            acc = 0
            for i, c in enumerate(commands):
                acc += c["weight"]
                if x < acc:
                    break
        indexes = [choosers[i].next(st) for _ in range(key_count(parsed[i]))]
        out.append([i, encode_template(parsed[i], prefix, indexes, lo, hi).decode()])
    return out


# ---- Template grammar (docs/workload.md, "Template grammar") ----
# Written over code points, where the engines work over UTF-8 bytes.

KNOWN = ["__key__", "__data__", "__rand_int__", "__tag__"]
REFUSED_SINGLES = {0x1680, 0x180E, 0x2028, 0x2029, 0x202F, 0x205F, 0x2060, 0x3000, 0xFEFF}
HEXDIGITS = "0123456789abcdefABCDEF"
ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "b": 0x08, "a": 0x07}


class TemplateError(Exception):
    pass


def refused_outside_quotes(ch):
    cp = ord(ch)
    return (cp < 0x20 and cp != 0x09) or 0x7F <= cp <= 0xA0 or 0x2000 <= cp <= 0x200D or cp in REFUSED_SINGLES


def split_arguments(text):
    """Arguments as lists of (bytes, plain) pieces; plain text may hold placeholders."""
    args = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i == n:
            return args
        pieces = []  # each: [bytearray, plain, group]; group changes at every quote
        group = 0

        def add(data, plain):
            if pieces and pieces[-1][1] == plain and pieces[-1][2] == group:
                pieces[-1][0].extend(data)
            else:
                pieces.append([bytearray(data), plain, group])

        while i < n and text[i] not in " \t":
            ch = text[i]
            if ch in "\"'":
                group += 1
                q = ch
                i += 1
                while True:
                    if i == n:
                        raise TemplateError("has an unclosed %s quote" % ("double" if q == '"' else "single"))
                    c = text[i]
                    if q == '"' and c == "\\" and i + 3 < n and text[i + 1] == "x" and text[i + 2] in HEXDIGITS and text[i + 3] in HEXDIGITS:
                        add(bytes([int(text[i + 2 : i + 4], 16)]), False)
                        i += 4
                    elif q == '"' and c == "\\" and i + 1 < n:
                        e = text[i + 1]
                        add(bytes([ESCAPES[e]]) if e in ESCAPES else e.encode(), False)
                        i += 2
                    elif q == "'" and c == "\\" and i + 1 < n and text[i + 1] == "'":
                        add(b"'", False)
                        i += 2
                    elif c == q:
                        i += 1
                        if i < n and text[i] not in " \t":
                            raise TemplateError("has text right after a closing quote (put a space between arguments)")
                        break
                    else:
                        add(c.encode(), q == '"')
                        i += 1
                group += 1
                break
            if refused_outside_quotes(ch):
                raise TemplateError(
                    "has U+%04X outside quotes (only ASCII spaces and tabs separate arguments; quote it to send it)" % ord(ch)
                )
            add(ch.encode(), True)
            i += 1
        args.append([(bytes(p[0]), p[1]) for p in pieces])


PLACEHOLDER_RE = re.compile(rb"__[A-Za-z_]*?__")


def argument_parts(pieces, used):
    parts = []
    lit = bytearray()
    for data, plain in pieces:
        if not plain:
            lit += data
            continue
        last = 0
        for m in PLACEHOLDER_RE.finditer(data):
            lit += data[last : m.start()]
            name = m.group(0).decode()
            if name not in KNOWN:
                raise TemplateError("has unknown placeholder %s (known: %s)" % (name, ", ".join(KNOWN)))
            if lit:
                parts.append(("lit", bytes(lit)))
                lit = bytearray()
            parts.append((name, None))
            used.add(name)
            last = m.end()
        lit += data[last:]
    if lit:
        parts.append(("lit", bytes(lit)))
    return parts


def parse_template(text, role, literal=False, key_optional=None):
    """[[part]] with part ("lit", bytes) or ("__key__", None)…; raises TemplateError.
    key_optional (default: literal): a mix's --command may have no __key__ (a command with no key, sent as written)."""
    if key_optional is None:
        key_optional = literal
    split = split_arguments(text)
    if not split:
        raise TemplateError("is empty")
    used = set()
    args = [argument_parts(p, used) for p in split]
    if not literal and len(args) == 1 and all(k == "lit" and b"__" not in v for k, v in args[0]):
        args.append([("__key__", None)])
        used.add("__key__")
        if role == "set":
            args.append([("__data__", None)])
            used.add("__data__")
    if any(k != "lit" for k, _ in args[0]):
        raise TemplateError("must start with a command name, not a placeholder")
    if not args[0]:
        raise TemplateError("has an empty command name")
    if not key_optional and "__key__" not in used:
        raise TemplateError("has no __key__ placeholder")
    return args


PART_NAMES = {"__key__": "key", "__data__": "data", "__rand_int__": "randInt", "__tag__": "tag"}


def template_vector(text, role, literal=False):
    v = {"template": text, "role": role, "literal": literal}
    try:
        args = parse_template(text, role, literal)
        v["args"] = [[{"hex": b.hex()} if k == "lit" else PART_NAMES[k] for k, b in arg] for arg in args]
    except TemplateError as e:
        v["error"] = str(e)
    return v


TEMPLATE_CASES = [
    # bare names and plain splitting
    ("SET", "set"), ("GET", "get"), (" \tRGET\t ", "get"), ("SET\t__key__\t__data__", "set"),
    ("HSET __key__ field __data__", "set"), ("SET k:__key__:x __data__ user:__rand_int__", "set"),
    ("SET __key__ x\\y", "set"), ("SET __key__ caf\u00e9", "set"),
    # quoting as redis-cli does
    ('HSET __key__ "my field" __data__', "set"), ("HSET __key__ 'it\\'s' __data__", "set"),
    ('SET __key__ "a\\tb\\n\\r\\\\\\"\\x41\\xff\\q\\b\\a"', "set"), ("SET __key__ 'raw \\n \\x41 \"'", "set"),
    ('SET __key__ ""', "set"), ("SET __key__ ''", "set"), ('SET __key__ x"y z"', "set"), ('"SET" __key__', "get"),
    ('SET __key__ "\\x4"', "set"), ('SET __key__ "\\xZZ"', "set"), ('SET __key__ "\\\u00e9"', "set"),
    ('SET __key__ "\u00a0 \ufeff\t\n\x1b"', "set"), ("SET __key__ '\r\n'", "set"),
    # placeholders inside quotes: double quotes yes, single quotes and escapes no
    ('SET "__key__" __data__', "set"), ('SET "k:__key__ x" __data__', "set"), ("SET '__key__' __data__", "set"),
    ('SET __key__ "\\__data__"', "set"), ('SET __key__ "__da"ta__', "set"), ('SET __key__ x"__data__"', "set"),
    # refused outside quotes
    ("SET\u00a0__key__", "get"), ("SET __key__\u0085__data__", "set"), ("\ufeffSET __key__", "get"),
    ("SET __key__ \u2003", "set"), ("SET __key__\n__data__", "set"), ("SET __key__ a\rb", "set"),
    ("SET __key__ \x1b[31m", "set"), ("SET __key__ \x7f", "set"), ("SET __key__\u3000x", "set"),
    ("SET __key__\u2028", "set"), ("SET __key__ \x00", "set"), ("SET __key__\u200b", "set"),
    # unbalanced and run-together quotes
    ('SET __key__ "abc', "set"), ("SET __key__ 'abc", "set"), ('SET __key__ "abc\\', "set"),
    ('SET __key__ "abc\\"', "set"), ('SET __key__ "a"b', "set"), ("SET __key__ 'a'b", "set"),
    ('SET __key__ "a"\'b\'', "set"), ('S"E"T __key__', "get"), ('"', "get"),
    # placeholder and shape rules
    ("", "set"), ("   ", "set"), ('""', "set"), ("''", "get"), ('"" __key__', "get"), ("__key__ SET", "set"),
    ('"__key__" SET', "set"), ("SET __key__ __value__", "set"), ("SET ___key__", "set"), ("SET foo", "set"),
    ("MY__CMD", "set"), ("'A B'", "get"),
    # the command suite's literal commands
    ("PING", "set", True), ('LPUSH "p:my list" __data__', "set", True), ('INCR "p\\x3a\\x5f_x:__rand_int__"', "set", True),
    # the suite under --cluster: a hash tag of the key draw
    ("SET key:{__tag__}:__rand_int__ __data__", "set", True), ('LPOP "mylist:{__tag__}"', "get", True),
    ("SET {__tag__}", "set"), ("GET __key__ __tag__", "get"), ("SET ___tag__", "set"),
]


def main():
    vectors = {
        "about": "Generated by test/vectors/generate.py from docs/workload.md; checked by both engines.",
        "fmix32": [[x, fmix32(x)] for x in [0, 1, 2, 12345, 0xDEADBEEF, M32]],
        "fnv1a32": [[s, fnv1a32(s.encode())] for s in ["", "a", "bench:key:0", "bench:ts:set:999999"]],
        "streams": [],
        "draws": [],
        "values": [],
        "commands": [],
        "split": [[t, c, [requests_for(t, c, i) for i in range(c)]] for t, c in [(10, 3), (1000000, 4), (5, 8)]],
    }
    for seed, conn in [(0, 0), (12345, 0), (12345, 1), (M32, 7)]:
        st = Stream(seed, conn)
        u32s = [st.u32() for _ in range(8)]
        st2 = Stream(seed, conn)
        u53s = [st2.u53() for _ in range(4)]
        vectors["streams"].append({"seed": seed, "connection": conn, "u32": u32s, "u53": u53s})
    for seed, conn, mode, ratio, keyspace in [
        (12345, 0, "set", 50, 100000),
        (12345, 1, "mixed", 50, 100000),
        (42, 0, "mixed", 20, 1000000000),
        (7, 2, "get", 50, 10),
    ]:
        vectors["draws"].append({
            "seed": seed, "connection": conn, "mode": mode, "setRatio": ratio, "keyspace": keyspace,
            "ops": draws(seed, conn, mode, ratio, keyspace, 12),
        })
    for key, lo, hi in [
        ("bench:key:0", 32, 32), ("bench:key:1", 32, 32), ("bench:key:1", 3, 3),
        ("bench:key:77", 8, 8), ("bench:key:77", 100, 100), ("x", 1, 1), ("bench:key:5", 32, 1024),
        ("bench:key:6", 32, 1024), ("bench:ts:get:999999", 64, 64),
    ]:
        vectors["values"].append({"key": key, "min": lo, "max": hi, "value": value(key.encode(), lo, hi).decode()})
    for key, lo, hi, generation in [
        ("bench:key:0", 32, 32, 1), ("bench:key:0", 32, 32, 2), ("bench:key:77", 8, 8, 7),
        ("bench:key:5", 32, 1024, 65535), ("bench:key:6", 40, 40, M32),
    ]:
        vectors["values"].append({
            "key": key, "min": lo, "max": hi, "generation": generation,
            "value": value(key.encode(), lo, hi, generation).decode(),
        })
    prefix = b"bench:key:"
    k = prefix + b"4711"
    v = value(k, 32, 32)
    rand_stream = Stream(12345 ^ 0x52414E44, 0)
    r1 = rand_stream.u53() % 100000
    r2 = rand_stream.u53() % 100000
    vectors["commands"] = [
        {"template": "SET", "role": "set", "keyPrefix": "bench:key:", "keyIndex": 4711, "valueSize": 32,
         "bytes": encode([b"SET", k, v]).decode()},
        {"template": "GET", "role": "get", "keyPrefix": "bench:key:", "keyIndex": 4711, "valueSize": 32,
         "bytes": encode([b"GET", k]).decode()},
        {"template": "RSET", "role": "set", "keyPrefix": "bench:key:", "keyIndex": 4711, "valueSize": 32,
         "bytes": encode([b"RSET", k, v]).decode()},
        {"template": "HSET __key__ field __data__", "role": "set", "keyPrefix": "bench:key:", "keyIndex": 4711,
         "valueSize": 32, "bytes": encode([b"HSET", k, b"field", v]).decode()},
        {"template": "HGET __key__ field", "role": "get", "keyPrefix": "bench:key:", "keyIndex": 4711,
         "valueSize": 32, "bytes": encode([b"HGET", k, b"field"]).decode()},
        {"template": "SET __key__ __data__ user:__rand_int__ __rand_int__", "role": "set", "keyPrefix": "bench:key:",
         "keyIndex": 4711, "valueSize": 32, "seed": 12345, "connection": 0, "keyspace": 100000,
         "bytes": encode([b"SET", k, v, b"user:%012d" % r1, b"%012d" % r2]).decode()},
        {"template": 'HSET "__key__" "my field" __data__', "role": "set", "keyPrefix": "bench:key:", "keyIndex": 4711,
         "valueSize": 32, "bytes": encode([b"HSET", k, b"my field", v]).decode()},
        {"template": "SADD \"s:__key__\" \"\\tx\\\"\" ''", "role": "set", "keyPrefix": "bench:key:", "keyIndex": 4711,
         "valueSize": 32, "bytes": encode([b"SADD", b"s:" + k, b'\tx"', b""]).decode()},
    ]
    # The command suite under --cluster (docs/cluster.md): literal commands whose keys carry a {__tag__};
    # "slot" is the slot the request is routed by, a command with no key's included.
    for template, prefix, index, size in [
        ("SET key:{__tag__}:__rand_int__ __data__", "", 4711, 3),
        ("MSET p:key:{__tag__}:__rand_int__ __data__ p:key:{__tag__}:__rand_int__ __data__", "p:", 98765, 8),
        ("LPUSH mylist:{__tag__} __data__", "", 0, 3),
        ("ZADD myzset:{__tag__} __rand_int__ element:__rand_int__", "", 2 ** 40 + 3, 3),
        ("GET {a}key:{__tag__}", "", 4711, 3),
        ("SET __key__ __data__", "bench:key:", 4711, 32),
        ("PING", "", 4711, 3),
        ("PING", "", 2 ** 33 + 4711, 3),
    ]:
        args = parse_template(template, "set", literal=True)
        rs = Stream(12345 ^ 0x52414E44, 0)
        vectors["commands"].append({
            "template": template, "role": "set", "literal": True, "keyPrefix": prefix, "keyIndex": index,
            "valueSize": size, "seed": 12345, "connection": 0, "keyspace": 100000,
            "bytes": encode_template(args, prefix.encode(), [index], size, size, (rs, 100000)).decode(),
            "slot": routing_slot(args, prefix.encode(), index),
        })
    vectors["templates"] = [template_vector(*case) for case in TEMPLATE_CASES]
    vectors["math"] = {
        "log2": [[a, det_log2(a)] for a in [1.0, 1.5, 2.0, 3.0, 10.0, 1000001.0, 123456789.123]],
        "exp2": [[y, det_exp2(y)] for y in [0.0, 0.5, 1.0, 3.25, 19.93, 29.9, -0.75]],
    }
    vectors["keyPatterns"] = []
    for pattern, keyspace, conn, conns, extra in [
        ("uniform", 1000, 0, 1, {}),
        ("sequential", 1000, 1, 3, {}),
        ("gaussian", 1000000, 0, 1, {}),
        ("gaussian", 100, 2, 4, {"stddev": 50}),
        ("zipf", 1000000000, 0, 1, {}),
        ("zipf", 1000, 1, 2, {"zipf": 1.0}),
        ("zipf", 100000, 0, 1, {"zipf": 1.5}),
    ]:
        st = Stream(31337, conn)
        ch = KeyChooser(pattern, keyspace, conn, conns, extra.get("stddev"), extra.get("zipf", 0.99))
        vectors["keyPatterns"].append({
            "pattern": pattern, "keyspace": keyspace, "seed": 31337, "connection": conn, "connections": conns,
            "keyStddev": extra.get("stddev"), "zipfExponent": extra.get("zipf", 0.99),
            "indexes": [ch.next(st) for _ in range(16)],
        })
    vectors["mixes"] = []
    for seed, conn, conns, keyspace, commands, pattern in [
        (12345, 0, 1, 1000, [
            {"template": "GET __key__", "weight": 80, "keyPattern": None},
            {"template": "SET", "weight": 15, "keyPattern": None},
            {"template": "INCR counter:__key__", "weight": 5, "keyPattern": "sequential"},
        ], "uniform"),
        (7, 1, 2, 100, [
            {"template": "HSET __key__ f __data__", "weight": 1, "keyPattern": "zipf"},
            {"template": "GET", "weight": 3, "keyPattern": None},
            {"template": "GET __key__", "weight": 2, "keyPattern": "gaussian"},
        ], "sequential"),
        (42, 0, 1, 50, [{"template": "SETNX", "weight": 9, "keyPattern": None}], "uniform"),
        (99, 0, 1, 100, [
            {"template": "MGET __key__ __key__ __key__", "weight": 3, "keyPattern": None},
            {"template": "MSET __key__ __data__ __key__ __data__", "weight": 1, "keyPattern": "sequential"},
            {"template": "SET x:__key__ __data__", "weight": 1, "keyPattern": None},
        ], "uniform"),
        # A command with no __key__ is sent as written (its draw of a key index still happens, as for any command).
        (5, 0, 1, 100, [
            {"template": "INCR ctr:total", "weight": 1, "keyPattern": None},
            {"template": "GET __key__", "weight": 2, "keyPattern": None},
            {"template": "HINCRBY stats hits 1", "weight": 1, "keyPattern": "sequential"},
        ], "uniform"),
    ]:
        vectors["mixes"].append({
            "seed": seed, "connection": conn, "connections": conns, "keyspace": keyspace, "keyPattern": pattern,
            "keyPrefix": "bench:key:", "valueSize": 16, "commands": commands,
            "requests": mix_requests(seed, conn, conns, keyspace, b"bench:key:", 16, 16, commands, 24, pattern),
        })
    print(json.dumps(vectors, indent=1))


if __name__ == "__main__":
    main()
