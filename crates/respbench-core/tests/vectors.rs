//! Every vector in test/vectors/workload.json (written by an independent
//! Python reading of docs/workload.md) against the Rust workload code. The
//! TypeScript engine checks the same file, so passing both means both
//! engines send the same bytes.

use std::path::PathBuf;

use respbench_core::command::{CommandEncoder, Part, Role, parse_template};
use respbench_core::keys::{
    KeyChooser, KeyPattern, KeyStream, RAND_INT_SALT, det_exp2, det_log2, fmix32, fnv1a32, requests_for_connection,
};
use respbench_core::plan::{CommandSpec, Mode, Plan};
use respbench_core::request_source::PreparedPlan;
use respbench_core::values::ValueFactory;
use serde_json::Value;

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test/vectors/workload.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("valid JSON")
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn list<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    let items = v[key].as_array().unwrap_or_else(|| panic!("{key} is not a list"));
    assert!(!items.is_empty(), "{key} has no vectors");
    items
}

#[test]
fn fmix32_matches() {
    for pair in list(&vectors(), "fmix32") {
        assert_eq!(fmix32(u64_of(&pair[0]) as u32) as u64, u64_of(&pair[1]), "fmix32({})", pair[0]);
    }
}

#[test]
fn fnv1a32_matches() {
    for pair in list(&vectors(), "fnv1a32") {
        let text = pair[0].as_str().unwrap();
        assert_eq!(fnv1a32(text.as_bytes()) as u64, u64_of(&pair[1]), "fnv1a32({text:?})");
    }
}

#[test]
fn same_seed_and_connection_give_the_same_prng_outputs() {
    for v in list(&vectors(), "streams") {
        let (seed, conn) = (u64_of(&v["seed"]) as u32, u64_of(&v["connection"]) as u32);
        let mut a = KeyStream::new(seed, conn);
        let u32s: Vec<u64> = v["u32"].as_array().unwrap().iter().map(|_| a.next_u32() as u64).collect();
        assert_eq!(u32s, v["u32"].as_array().unwrap().iter().map(u64_of).collect::<Vec<_>>(), "u32 of {v}");
        let mut b = KeyStream::new(seed, conn);
        let u53s: Vec<u64> = v["u53"].as_array().unwrap().iter().map(|_| b.next_u53()).collect();
        assert_eq!(u53s, v["u53"].as_array().unwrap().iter().map(u64_of).collect::<Vec<_>>(), "u53 of {v}");
    }
}

#[test]
fn draws_the_same_operations_and_key_indexes() {
    for v in list(&vectors(), "draws") {
        let mut s = KeyStream::new(u64_of(&v["seed"]) as u32, u64_of(&v["connection"]) as u32);
        let mode = v["mode"].as_str().unwrap();
        let ratio = u64_of(&v["setRatio"]) as u32;
        let keyspace = u64_of(&v["keyspace"]);
        for op in v["ops"].as_array().unwrap() {
            let is_set = if mode == "mixed" { s.next_is_set(ratio) } else { mode == "set" };
            let index = s.next_key_index(keyspace);
            assert_eq!((if is_set { "set" } else { "get" }, index), (op[0].as_str().unwrap(), u64_of(&op[1])), "{v}");
        }
    }
}

#[test]
fn derives_the_same_value_from_a_key_and_size() {
    for v in list(&vectors(), "values") {
        let generation = v.get("generation").map_or(0, u64_of) as u32;
        let values = ValueFactory::with_generation(u64_of(&v["min"]) as usize, u64_of(&v["max"]) as usize, generation);
        let key = v["key"].as_str().unwrap();
        let got = values.value_for_key(key.as_bytes());
        assert_eq!(String::from_utf8(got.clone()).unwrap(), v["value"].as_str().unwrap(), "{v}");
        assert!(values.matches(&got, fnv1a32(key.as_bytes())));
    }
}

#[test]
fn splits_requests_across_connections_the_same_way() {
    for v in list(&vectors(), "split") {
        let (total, conns) = (u64_of(&v[0]), u64_of(&v[1]));
        let shares: Vec<u64> = (0..conns).map(|c| requests_for_connection(total, conns, c)).collect();
        assert_eq!(shares, v[2].as_array().unwrap().iter().map(u64_of).collect::<Vec<_>>(), "{v}");
    }
}

#[test]
fn encodes_the_same_command_bytes() {
    for v in list(&vectors(), "commands") {
        let role = if v["role"] == "set" { Role::Set } else { Role::Get };
        let size = u64_of(&v["valueSize"]) as usize;
        let values = ValueFactory::new(size, size);
        let keyspace = v.get("keyspace").map(u64_of).unwrap_or(100_000);
        let literal = v.get("literal").and_then(Value::as_bool).unwrap_or(false);
        let template = parse_template(v["template"].as_str().unwrap(), role, literal).unwrap();
        let enc = CommandEncoder::new(template, v["keyPrefix"].as_str().unwrap().as_bytes(), keyspace);
        let seed = v.get("seed").map(u64_of).unwrap_or(0) as u32;
        let conn = v.get("connection").map(u64_of).unwrap_or(0) as u32;
        let mut rand = KeyStream::new(seed ^ RAND_INT_SALT, conn);
        let mut out = vec![0u8; enc.max_bytes(&values)];
        let (n, _) = enc.encode(&mut out, u64_of(&v["keyIndex"]), &mut rand, &values);
        assert_eq!(String::from_utf8_lossy(&out[..n]), v["bytes"].as_str().unwrap(), "{}", v["template"]);
        if let Some(slot) = v.get("slot") {
            let mut scratch = vec![0u8; enc.key_arg_bytes()];
            assert_eq!(enc.key_slot(u64_of(&v["keyIndex"]), &mut scratch) as u64, u64_of(slot), "{}", v["template"]);
        }
    }
}

/// A part as the vectors write it: "key", "data", "randInt", "tag" or {"hex": …} for literal bytes.
fn part_json(p: &Part) -> Value {
    match p {
        Part::Literal(b) => serde_json::json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() }),
        Part::Key => "key".into(),
        Part::Data => "data".into(),
        Part::RandInt => "randInt".into(),
        Part::Tag => "tag".into(),
    }
}

#[test]
fn templates_split_unquote_and_refuse_as_the_reference_does() {
    let all = vectors();
    let cases = list(&all, "templates");
    assert!(cases.len() > 40);
    for v in cases {
        let role = if v["role"] == "set" { Role::Set } else { Role::Get };
        let text = v["template"].as_str().unwrap();
        let got = match parse_template(text, role, v["literal"].as_bool().unwrap()) {
            Ok(t) => {
                serde_json::json!({ "args": t.args.iter().map(|a| a.iter().map(part_json).collect::<Vec<_>>()).collect::<Vec<_>>() })
            }
            Err(e) => serde_json::json!({ "error": e.0 }),
        };
        let want = match v.get("error") {
            Some(e) => serde_json::json!({ "error": e }),
            None => serde_json::json!({ "args": v["args"] }),
        };
        assert_eq!(got, want, "template {text:?}");
    }
}

#[test]
fn deterministic_log2_and_exp2_agree_to_the_bit() {
    let v = vectors();
    for (name, f) in [("log2", det_log2 as fn(f64) -> f64), ("exp2", det_exp2)] {
        let pairs = v["math"][name].as_array().unwrap_or_else(|| panic!("math.{name} missing"));
        assert!(!pairs.is_empty());
        for pair in pairs {
            let (x, y) = (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap());
            assert_eq!(f(x).to_bits(), y.to_bits(), "{name}({x}) = {} not {y}", f(x));
        }
    }
}

#[test]
fn key_patterns_draw_the_same_indexes() {
    for v in list(&vectors(), "keyPatterns") {
        let pattern = KeyPattern::parse(v["pattern"].as_str().unwrap()).unwrap();
        let (conn, conns) = (u64_of(&v["connection"]), u64_of(&v["connections"]));
        let mut chooser = KeyChooser::new(
            pattern,
            v["keyStddev"].as_f64(),
            v["zipfExponent"].as_f64().unwrap(),
            u64_of(&v["keyspace"]),
            conn,
            conns,
        );
        let mut stream = KeyStream::new(u64_of(&v["seed"]) as u32, conn as u32);
        let expected: Vec<u64> = v["indexes"].as_array().unwrap().iter().map(u64_of).collect();
        let got: Vec<u64> = expected.iter().map(|_| chooser.next(&mut stream)).collect();
        assert_eq!(got, expected, "{}", v["pattern"]);
    }
}

/// A connection's first `count` requests through the engine's own RequestSource: (command, key index, bytes).
fn requests_of(plan: Plan, connection: u32, count: usize) -> Vec<(u16, u64, String)> {
    let prepared = PreparedPlan::new(plan).expect("templates parse");
    let mut source = prepared.run_source(connection, true, None, respbench_core::request_source::Side::All);
    let mut out = vec![0u8; prepared.max_request_bytes];
    (0..count)
        .map(|_| {
            let r = source.next(&prepared, &mut out);
            (r.command, r.key_index, out[..r.len].iter().map(|&b| b as char).collect())
        })
        .collect()
}

#[test]
fn mode_draws_the_same_operations_and_key_indexes_through_the_request_source() {
    for v in list(&vectors(), "draws") {
        let mut plan = Plan::new("127.0.0.1", 6379);
        plan.seed = u64_of(&v["seed"]) as u32;
        let connection = u64_of(&v["connection"]) as u32;
        plan.connections = connection + 1;
        plan.mode = Mode::parse(v["mode"].as_str().unwrap()).unwrap();
        plan.set_ratio = u64_of(&v["setRatio"]) as u32;
        plan.keyspace = u64_of(&v["keyspace"]);
        let ops = v["ops"].as_array().unwrap();
        let got = requests_of(plan, connection, ops.len());
        for (op, (command, key, _)) in ops.iter().zip(got) {
            let name = if command == 0 { "set" } else { "get" };
            assert_eq!((name, key), (op[0].as_str().unwrap(), u64_of(&op[1])), "{v}");
        }
    }
}

#[test]
fn a_weighted_command_mix_draws_the_same_commands_and_sends_the_same_bytes() {
    for v in list(&vectors(), "mixes") {
        let mut plan = Plan::new("127.0.0.1", 6379);
        plan.seed = u64_of(&v["seed"]) as u32;
        plan.connections = u64_of(&v["connections"]) as u32;
        plan.keyspace = u64_of(&v["keyspace"]);
        plan.key_pattern = KeyPattern::parse(v["keyPattern"].as_str().unwrap()).unwrap();
        plan.key_prefix = v["keyPrefix"].as_str().unwrap().to_string();
        plan.value_size_min = u64_of(&v["valueSize"]) as usize;
        plan.value_size_max = plan.value_size_min;
        plan.commands = list(v, "commands")
            .iter()
            .map(|c| CommandSpec {
                template: c["template"].as_str().unwrap().to_string(),
                weight: u64_of(&c["weight"]) as u32,
                key_pattern: c["keyPattern"].as_str().map(|p| KeyPattern::parse(p).unwrap()),
            })
            .collect();
        let want = list(v, "requests");
        let got = requests_of(plan, u64_of(&v["connection"]) as u32, want.len());
        for (w, (command, _, bytes)) in want.iter().zip(got) {
            assert_eq!((command as u64, bytes.as_str()), (u64_of(&w[0]), w[1].as_str().unwrap()), "{v}");
        }
    }
}
