//! What kind of request a template sends, by its command name: a write, a
//! read whose reply is the key's value, or any other command. It decides how
//! a reply counts (and whether `--verify-get` checks it); kept apart from the
//! encoder so the counting side ([`crate::histogram`], the tally) needs no
//! request bytes.

use crate::template::{Part, Role, Template, TemplateError};

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

/// Commands that may delete their keys or give them an expiry: from when
/// one is sent, a nil read of its keys is a miss, never a lost write. As
/// REMOVING_NAMES in command.ts (docs/workload.md, "Replies").
const REMOVING_NAMES: [&str; 14] = [
    "DEL",
    "UNLINK",
    "GETDEL",
    "EXPIRE",
    "PEXPIRE",
    "EXPIREAT",
    "PEXPIREAT",
    "SETEX",
    "PSETEX",
    "RENAME",
    "RENAMENX",
    "MOVE",
    "HDEL",
    "RESTORE",
];
/// Options that give a `SET` or `GETEX` an expiry (the key may be gone when read).
const EXPIRY_OPTIONS: [&str; 4] = ["EX", "PX", "EXAT", "PXAT"];

/// Whether a request of `template` may remove or expire the keys it names:
/// a command of [`REMOVING_NAMES`], or a `SET`/`GETEX` with an expiry option.
pub fn removes_keys(template: &Template) -> bool {
    let name = template_name(template);
    if REMOVING_NAMES.contains(&name.as_str()) {
        return true;
    }
    (name == "SET" || name == "GETEX") && EXPIRY_OPTIONS.iter().any(|o| has_option(template, o))
}

/// Whether an argument after the command name is the literal `option` (any case): `NX`, `EX`, `GET`, …
fn has_option(template: &Template, option: &str) -> bool {
    template.args[1..]
        .iter()
        .any(|parts| matches!(parts.as_slice(), [Part::Literal(b)] if option.as_bytes().eq_ignore_ascii_case(b)))
}

/// What a write's reply says when it left its key as it was (a conditional
/// write): then the key is not counted written (docs/workload.md,
/// "Replies"). Paired with unwrittenWhen in command.ts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwritten {
    /// Every answer but an error is a write.
    Never,
    /// `:0` (SETNX, MSETNX, HSETNX).
    OnZero,
    /// A nil (`SET … NX`, `SET … XX`, `SET … XX GET`).
    OnNil,
    /// A value: `SET … NX GET` answers the value it found and did not replace (nil: it wrote).
    OnValue,
}

/// Conditional writes named for it: `:0` when they wrote nothing.
const NX_NAMES: [&str; 3] = ["SETNX", "MSETNX", "HSETNX"];
/// Commands that remove every key of the database: from when one is sent, no nil read is a lost write.
const FLUSH_NAMES: [&str; 3] = ["FLUSHDB", "FLUSHALL", "SWAPDB"];

/// How a write of `template` may leave its key as it was: see [`Unwritten`].
pub fn unwritten_when(template: &Template) -> Unwritten {
    let name = template_name(template);
    if NX_NAMES.contains(&name.as_str()) {
        return Unwritten::OnZero;
    }
    if name != "SET" {
        return Unwritten::Never;
    }
    let has = |option: &str| has_option(template, option);
    match (has("NX"), has("XX"), has("GET")) {
        (true, _, true) => Unwritten::OnValue,
        (true, _, false) | (_, true, _) => Unwritten::OnNil,
        _ => Unwritten::Never,
    }
}

/// Whether a request of `template` removes every key (FLUSHDB, FLUSHALL, SWAPDB).
pub fn removes_every_key(template: &Template) -> bool {
    FLUSH_NAMES.contains(&template_name(template).as_str())
}

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

/// One `--command` of a mix (here, beside `mix_role`, so the template grammar needs nothing of this module): its role from its name (`mix_role`), and a
/// command with no `__key__` (`INCR ctr:__rand_int__`) is a command with no
/// key, sent as written, as the same words after the options are. A single
/// bare word still takes the kvstore shape (`GET` is `GET key`). Paired with
/// parseMixTemplate in command.ts.
pub fn parse_mix_template(source: &str, literal: bool) -> Result<Template, TemplateError> {
    crate::template::parse_template_keyed(source, mix_role(source), literal, true)
}
