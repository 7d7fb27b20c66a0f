//! What kind of request a template sends, by its command name: a write, a
//! read whose reply is the key's value, or any other command. It decides how
//! a reply counts (and whether `--verify-get` checks it); kept apart from the
//! encoder so the counting side ([`crate::histogram`], the tally) needs no
//! request bytes.

use crate::template::{Part, Role, Template};

/// Whether a request was a write or a read: decides how its reply counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Set,
    Get,
}

/// Bare names a `--command` mix takes as writes (`NAME key value`); any other
/// bare name is `NAME key`. As WRITE_NAMES in command.ts.
const WRITE_NAMES: [&str; 4] = ["SET", "SETNX", "GETSET", "APPEND"];
/// Reads whose reply is the key's value, so `--verify-get` checks it. As VALUE_READS in command.ts.
const VALUE_READS: [&str; 4] = ["GET", "GETEX", "GETDEL", "MGET"];
/// Reads answered with an array of values, one per key (checked key by key). As ARRAY_READS in command.ts.
pub const ARRAY_READS: [&str; 1] = ["MGET"];

/// The template's command name, upper case (ASCII), from its first argument's bytes.
pub fn template_name(template: &Template) -> String {
    let mut name = String::new();
    for part in template.args.first().map(Vec::as_slice).unwrap_or(&[]) {
        if let Part::Literal(bytes) = part {
            name.extend(bytes.iter().map(|&b| (b as char).to_ascii_uppercase()));
        }
    }
    name
}

/// Which role a bare name in a `--command` mix takes: see `WRITE_NAMES`.
pub fn mix_role(source: &str) -> Role {
    let word = source.trim_matches([' ', '\t']).split([' ', '\t']).next().unwrap_or("");
    if WRITE_NAMES.iter().any(|w| w.eq_ignore_ascii_case(word)) { Role::Set } else { Role::Get }
}

/// How a mix command's replies count, as `CommandKind` in command.ts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Sends `__data__`: acknowledged, the key holds its value.
    Write,
    /// GET and kin: the reply is the key's value, checked by `--verify-get`.
    Read,
    /// INCR, LPUSH, …: any reply but an error is fine.
    Other,
}

pub fn command_kind(template: &Template) -> CommandKind {
    if template.uses_data {
        CommandKind::Write
    } else if !template.uses_rand_int && VALUE_READS.contains(&template_name(template).as_str()) {
        CommandKind::Read
    } else {
        CommandKind::Other
    }
}
