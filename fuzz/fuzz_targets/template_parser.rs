//! Any text as --set-cmd/--get-cmd: parsing never panics, and a template that
//! parses encodes to a well-formed RESP array the scanner accepts whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use respbench_core::command::{parse_template, CommandEncoder, Role};
use respbench_core::reply::{ReplyScanner, Scan};
use respbench_core::keys::KeyStream;
use respbench_core::values::ValueFactory;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for (role, literal) in [(Role::Set, false), (Role::Get, false), (Role::Set, true)] {
        let Ok(template) = parse_template(text, role, literal) else { continue };
        let values = ValueFactory::new(1, 64);
        let encoder = CommandEncoder::new(template, b"fz:", 1000);
        let mut out = vec![0u8; encoder.max_bytes(&values)];
        let mut rand = KeyStream::new(7, 0);
        let (n, _hash) = encoder.encode(&mut out, 42, &mut rand, &values);
        assert!(n <= out.len());
        let mut scanner = ReplyScanner::new();
        assert_eq!(scanner.scan(&out[..n], 0), Ok(Scan::Complete(n)), "encoded command is not one whole RESP array");
    }
});
