#!/usr/bin/env python3
"""CLUSTER SLOTS and CLUSTER SHARDS replies that are wrong in one way each,
with the one line both engines refuse them with: the TypeScript reading
(packages/cli/src/topology.ts: discovery before the run, and the JS engine's
refresh) and the Rust one (crates/respbench-core/src/topology.rs: the native
engine's refresh) check themselves against test/vectors/topology.json, so a
bad reply is refused the same way, with the same words, wherever it comes.
test/cluster-topology-invalid.test.ts serves some of them from a real socket.

Run: python3 test/vectors/topology.py > test/vectors/topology.json
"""
import json

H = "127.0.0.1"


def resp(v):
    """RESP2 bytes (as text) of an int, a str (bulk), None (nil) or a list."""
    if v is None:
        return "$-1\r\n"
    if isinstance(v, bool):
        raise TypeError(v)
    if isinstance(v, int):
        return f":{v}\r\n"
    if isinstance(v, str):
        return f"${len(v.encode())}\r\n{v}\r\n"
    return f"*{len(v)}\r\n" + "".join(resp(x) for x in v)


def node(port, id_="n", host=H):
    return [host, port, id_]


def slots_range(first, last, primary, *replicas):
    return [first, last, primary, *replicas]


def two_slots(second_first=8192, second_last=16383, second=None, first=(0, 8191)):
    return [
        slots_range(first[0], first[1], node(7000, "a")),
        slots_range(second_first, second_last, second if second is not None else node(7001, "b")),
    ]


def member(port, id_, role="master", health="online", endpoint=H, port_key="port"):
    entry = ["id", id_]
    if port is not None:
        entry += [port_key, port]
    entry += ["ip", H, "endpoint", endpoint, "role", role, "replication-offset", 0, "health", health]
    return entry


def shard(bounds, *members):
    return ["slots", list(bounds), "nodes", list(members)]


def two_shards(second_bounds=(8192, 16383), second=None, first_bounds=(0, 8191)):
    return [
        shard(first_bounds, member(7000, "n1"), member(7002, "r1", role="replica")),
        shard(second_bounds, *(second if second is not None else [member(7001, "n2")])),
    ]


CASES = [
    ("slots", "a slot past 16383", two_slots(8192, 16384), f"node {H}:7001: slot range 8192-16384 is not within 0-16383"),
    ("slots", "a negative slot", two_slots(first=(-1, 8191)), f"node {H}:7000: slot range -1-8191 is not within 0-16383"),
    ("slots", "a range whose start is past its end", two_slots(9000, 8192), f"node {H}:7001: slot range 9000-8192 is not within 0-16383"),
    ("slots", "overlapping ranges", two_slots(8000, 16383), f"node {H}:7001: slot range 8000-16383 overlaps a range of node {H}:7000 (slot 8000)"),
    ("slots", "a slot nobody owns", [slots_range(0, 8191, node(7000))], "slots 8192-16383 have no primary in the reply (is cluster_state ok? see CLUSTER INFO)"),
    ("slots", "a primary with no host and port", two_slots(second=[H]), "CLUSTER SLOTS: slots 8192-16383: the primary has no host and port"),
    ("slots", "a port past 65535", two_slots(second=node(70000)), "CLUSTER SLOTS: slots 8192-16383: the primary has a port that is not a port number"),
    ("slots", "a port that is text", two_slots(second=[H, "7001", "b"]), "CLUSTER SLOTS: slots 8192-16383: the primary has a port that is not a port number"),
    ("slots", "a host of ? (unknown)", two_slots(second=node(7001, host="?")), "CLUSTER SLOTS: slots 8192-16383: the primary has no known endpoint"),
    ("slots", "a host that is not a host name", two_slots(second=node(7001, host="bad host")), 'CLUSTER SLOTS: slots 8192-16383: the primary has a host that is not a host name: "bad host"'),
    ("slots", "a range with no primary", [[0, 16383]], "CLUSTER SLOTS: range 0 has no primary"),
    ("slots", "a slot that is text", [["0", 16383, node(7000)]], "CLUSTER SLOTS: range 0 has a first slot that is not an integer"),
    ("slots", "not a list", 3, "CLUSTER SLOTS: the reply is not a list"),
    ("shards", "a slot past 16383", two_shards((8192, 16384)), f"node {H}:7001: slot range 8192-16384 is not within 0-16383"),
    ("shards", "a range whose start is past its end", two_shards((16383, 8192)), f"node {H}:7001: slot range 16383-8192 is not within 0-16383"),
    ("shards", "overlapping ranges", two_shards((100, 16383)), f"node {H}:7001: slot range 100-16383 overlaps a range of node {H}:7000 (slot 100)"),
    ("shards", "a slot nobody owns", two_shards((8192, 16000)), "slots 16001-16383 have no primary in the reply (is cluster_state ok? see CLUSTER INFO)"),
    ("shards", "a port past 65535", two_shards(second=[member(70000, "n2")]), "CLUSTER SHARDS: node n2 (shard 1) has a port that is not a port number"),
    ("shards", "a replica's tls-port that is text", two_shards(second=[member(7001, "n2"), member("x", "r2", role="replica", port_key="tls-port")]), "CLUSTER SHARDS: node r2 (shard 1) has a tls-port that is not a port number"),
    ("shards", "a primary with no port", two_shards(second=[member(None, "n2")]), "CLUSTER SHARDS: primary n2 (shard 1) announces no endpoint to reach it on"),
    ("shards", "a primary at ? (unknown)", two_shards(second=[member(7001, "n2", endpoint="?")]), "CLUSTER SHARDS: primary n2 (shard 1) announces no endpoint to reach it on"),
    ("shards", "a host that is not a host name", two_shards(second=[member(7001, "n2", endpoint="a\tb")]), 'CLUSTER SHARDS: node n2 (shard 1) has a host that is not a host name: "a\\x09b"'),
    ("shards", "a failed primary", two_shards(second=[member(7001, "n2", health="fail")]), "CLUSTER SHARDS: shard 1 (slots 8192-16383) has no primary that is not failed"),
    ("shards", "a node entry that is not a map", two_shards(second=[3]), "CLUSTER SHARDS: shard 1 node 0 is not a map"),
    ("shards", "an odd number of slot bounds", two_shards((8192,)), "CLUSTER SHARDS: shard 1 has an odd number of slot bounds"),
    ("shards", "a slot bound that is text", two_shards(("8192", 16383)), "CLUSTER SHARDS: shard 1 has a slot bound that is not an integer"),
    ("shards", "a shard with no nodes field", [shard((0, 16383), member(7000, "n1"))[:2]], "CLUSTER SHARDS: shard 0 has no nodes field"),
    ("shards", "not a list", "nope", "CLUSTER SHARDS: the reply is not a list"),
]

if __name__ == "__main__":
    out = [{"command": c, "case": name, "reply": resp(reply), "error": error} for c, name, reply, error in CASES]
    print(json.dumps({"seed": "seed", "invalid": out}, indent=1))
