//! A command template: the text of `--set-cmd`, `--get-cmd` or a `--command`
//! of a mix, parsed once into arguments made of fixed bytes and placeholders.
//! A bare name (`HSET`) means `HSET __key__ __data__` for writes and
//! `HSET __key__` for reads; a template names its arguments with the
//! placeholders of memtier and redis-benchmark. Arguments are split on ASCII
//! spaces and tabs and may be quoted as in redis-cli (the grammar is in
//! docs/workload.md). Encoding a parsed template per request is
//! [`crate::command`]'s job; how its replies count is [`crate::command_kind`]'s.

use std::fmt;

pub const PLACEHOLDERS: [&str; 4] = ["__key__", "__data__", "__rand_int__", "__tag__"];

/// Whether a template is used for writes or reads: it decides what a bare
/// command name expands to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Set,
    Get,
}

/// One piece of an argument: fixed bytes, or a placeholder filled per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Literal(Vec<u8>),
    Key,
    Data,
    RandInt,
    /// `__tag__`: the request's (first) key index in decimal, for a `{…}`
    /// hash tag (docs/workload.md): a request's keys that hold it share one slot.
    Tag,
}

/// A parsed `--set-cmd` / `--get-cmd`.
#[derive(Clone, Debug)]
pub struct Template {
    /// The text the user gave.
    pub source: String,
    pub args: Vec<Vec<Part>>,
    pub uses_key: bool,
    pub uses_data: bool,
    pub uses_rand_int: bool,
    /// Sent in the inline form (`PING\r\n`), not as a RESP array: see [`inline_form`].
    pub inline: bool,
}

/// A template the engine cannot send; the text completes "the command …".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TemplateError {}

/// Code points refused outside quotes (docs/workload.md, "Template grammar"):
/// C0 controls but tab, DEL and C1 controls, and the non-ASCII spaces and
/// invisible separators a copy-paste brings in. Only ASCII space and tab
/// separate arguments; inside quotes every one of these is sent as its bytes.
pub fn refused_outside_quotes(c: char) -> bool {
    let cp = c as u32;
    if cp < 0x20 {
        return cp != 0x09;
    }
    matches!(cp, 0x7f..=0xa0 | 0x2000..=0x200d | 0x1680 | 0x180e | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x2060 | 0x3000 | 0xfeff)
}

/// A stretch of one argument's bytes: `plain` text (unquoted or in double
/// quotes, not from an escape) may hold placeholders; single-quoted text and
/// escaped bytes never do.
struct Run {
    bytes: Vec<u8>,
    plain: bool,
}

/// Appends `b` to the last run when it is of the same kind, else to a new
/// one; `fresh` (after a quote starts or ends) always starts a new run.
fn add(runs: &mut Vec<Run>, fresh: &mut bool, b: u8, plain: bool) {
    match runs.last_mut() {
        Some(run) if !*fresh && run.plain == plain => run.bytes.push(b),
        _ => runs.push(Run { bytes: vec![b], plain }),
    }
    *fresh = false;
}

fn hex_value(b: u8) -> u8 {
    if b.is_ascii_digit() { b - b'0' } else { (b | 0x20) - b'a' + 10 }
}

/// Splits a template into arguments as redis-cli does, except that only
/// ASCII space and tab separate them (docs/workload.md, "Template grammar").
fn split_arguments(source: &str) -> Result<Vec<Vec<Run>>, TemplateError> {
    let src = source.as_bytes();
    let n = src.len();
    let is_sep = |b: u8| b == b' ' || b == b'\t';
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < n && is_sep(src[i]) {
            i += 1;
        }
        if i == n {
            return Ok(args);
        }
        let mut runs: Vec<Run> = Vec::new();
        let mut fresh = true;
        let mut done = false;
        while !done && i < n {
            let b = src[i];
            if is_sep(b) {
                break;
            }
            if b == b'"' || b == b'\'' {
                // A quoted stretch is a run of its own: a placeholder is never split by a quote.
                fresh = true;
                let quote = b;
                i += 1;
                loop {
                    if i == n {
                        let which = if quote == b'"' { "double" } else { "single" };
                        return Err(TemplateError(format!("has an unclosed {which} quote")));
                    }
                    let c = src[i];
                    if quote == b'"'
                        && c == b'\\'
                        && i + 3 < n
                        && src[i + 1] == b'x'
                        && src[i + 2].is_ascii_hexdigit()
                        && src[i + 3].is_ascii_hexdigit()
                    {
                        add(&mut runs, &mut fresh, hex_value(src[i + 2]) * 16 + hex_value(src[i + 3]), false);
                        i += 4;
                    } else if quote == b'"' && c == b'\\' && i + 1 < n {
                        let e = match src[i + 1] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        };
                        add(&mut runs, &mut fresh, e, false);
                        i += 2;
                    } else if quote == b'\'' && c == b'\\' && i + 1 < n && src[i + 1] == b'\'' {
                        add(&mut runs, &mut fresh, b'\'', false);
                        i += 2;
                    } else if c == quote {
                        i += 1;
                        if i < n && !is_sep(src[i]) {
                            return Err(TemplateError(
                                "has text right after a closing quote (put a space between arguments)".into(),
                            ));
                        }
                        done = true;
                        break;
                    } else {
                        add(&mut runs, &mut fresh, c, quote == b'"');
                        i += 1;
                    }
                }
                fresh = true;
                continue;
            }
            // `i` is always at a character boundary here: quotes and escapes are ASCII.
            let ch = source[i..].chars().next().expect("a character at a boundary");
            if refused_outside_quotes(ch) {
                return Err(TemplateError(format!(
                    "has U+{:04X} outside quotes (only ASCII spaces and tabs separate arguments; quote it to send it)",
                    ch as u32
                )));
            }
            for k in 0..ch.len_utf8() {
                add(&mut runs, &mut fresh, src[i + k], true);
            }
            i += ch.len_utf8();
        }
        args.push(runs);
    }
}

/// Finds the next `__word__` at or after `from`, as the TypeScript regex
/// `/__[A-Za-z_]*?__/g` does: the earliest start, then the shortest match.
fn next_placeholder(word: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut start = from;
    while start + 4 <= word.len() {
        if word[start] == b'_' && word[start + 1] == b'_' {
            let mut k = start + 2;
            while k < word.len() {
                if k + 1 < word.len() && word[k] == b'_' && word[k + 1] == b'_' {
                    return Some((start, k + 2));
                }
                if word[k].is_ascii_alphabetic() || word[k] == b'_' {
                    k += 1;
                } else {
                    break;
                }
            }
        }
        start += 1;
    }
    None
}

#[derive(Default)]
struct Used {
    key: bool,
    data: bool,
    rand_int: bool,
}

/// One argument's runs as parts: placeholders found in plain runs, literals merged.
fn argument_parts(runs: &[Run], used: &mut Used) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut literal: Vec<u8> = Vec::new();
    for run in runs {
        if !run.plain {
            literal.extend_from_slice(&run.bytes);
            continue;
        }
        let bytes = &run.bytes;
        let mut last = 0;
        while let Some((start, end)) = next_placeholder(bytes, last) {
            literal.extend_from_slice(&bytes[last..start]);
            let part = match &bytes[start..end] {
                b"__key__" => {
                    used.key = true;
                    Part::Key
                }
                b"__data__" => {
                    used.data = true;
                    Part::Data
                }
                b"__rand_int__" => {
                    used.rand_int = true;
                    Part::RandInt
                }
                b"__tag__" => Part::Tag,
                other => {
                    return Err(TemplateError(format!(
                        "has unknown placeholder {} (known: {})",
                        String::from_utf8_lossy(other),
                        PLACEHOLDERS.join(", ")
                    )));
                }
            };
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(part);
            last = end;
        }
        literal.extend_from_slice(&bytes[last..]);
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// Parses `--set-cmd` / `--get-cmd` by the grammar in docs/workload.md
/// ("Template grammar"), the same as command.ts and test/vectors/generate.py;
/// test/vectors/workload.json ("templates") pins all three. A single argument
/// without `__` is the kvstore shape (`NAME key value` or `NAME key`).
/// `literal` (the command suite's own commands) sends a single word as it is
/// and needs no `__key__`.
pub fn parse_template(source: &str, role: Role, literal: bool) -> Result<Template, TemplateError> {
    parse_template_keyed(source, role, literal, literal)
}

/// `parse_template` with the key made optional or not: `crate::command_kind::parse_mix_template` is the mix's use of it.
pub(crate) fn parse_template_keyed(
    source: &str,
    role: Role,
    literal: bool,
    key_optional: bool,
) -> Result<Template, TemplateError> {
    let split = split_arguments(source)?;
    if split.is_empty() {
        return Err(TemplateError("is empty".into()));
    }
    let mut used = Used::default();
    let mut args = Vec::with_capacity(split.len() + 2);
    for runs in &split {
        args.push(argument_parts(runs, &mut used)?);
    }
    let bare =
        args.len() == 1 && args[0].iter().all(|p| matches!(p, Part::Literal(b) if !b.windows(2).any(|w| w == b"__")));
    if !literal && bare {
        args.push(vec![Part::Key]);
        used.key = true;
        if role == Role::Set {
            args.push(vec![Part::Data]);
            used.data = true;
        }
    }
    if args[0].iter().any(|p| !matches!(p, Part::Literal(_))) {
        return Err(TemplateError("must start with a command name, not a placeholder".into()));
    }
    if args[0].is_empty() {
        return Err(TemplateError("has an empty command name".into()));
    }
    if !key_optional && !used.key {
        return Err(TemplateError("has no __key__ placeholder".into()));
    }
    Ok(Template {
        source: source.to_string(),
        args,
        uses_key: used.key,
        uses_data: used.data,
        uses_rand_int: used.rand_int,
        inline: false,
    })
}

/// The template with every `__rand_int__` turned into the literal text
/// `__rand_int__` (`Plan::rand_int_literal`: redis-benchmark without -r).
pub fn rand_int_as_text(mut template: Template) -> Template {
    if !template.uses_rand_int {
        return template;
    }
    for parts in &mut template.args {
        for p in parts.iter_mut() {
            if *p == Part::RandInt {
                *p = Part::Literal(b"__rand_int__".to_vec());
            }
        }
    }
    template.uses_rand_int = false;
    template
}

/// The template sent in the inline form, words and CRLF (`Plan::inline_commands`:
/// redis-benchmark's PING_INLINE). Only fixed words: a key or value could hold
/// a space or CRLF, which the inline form cannot carry.
pub fn inline_form(mut template: Template) -> Result<Template, TemplateError> {
    if template.args.iter().flatten().any(|p| !matches!(p, Part::Literal(_))) {
        return Err(TemplateError("is sent inline, so it takes fixed words only (no placeholders)".into()));
    }
    template.inline = true;
    Ok(template)
}

/// Why a read template's replies cannot be checked against what was written.
pub fn unverifiable_reason(get: &Template) -> Option<&'static str> {
    if get.uses_data {
        Some("a read command that sends __data__ cannot be verified")
    } else if get.uses_rand_int {
        Some("a read command with __rand_int__ cannot be verified")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_expand_to_the_kvstore_shape() {
        let set = parse_template("RSET", Role::Set, false).unwrap();
        assert_eq!(set.args, vec![vec![Part::Literal(b"RSET".to_vec())], vec![Part::Key], vec![Part::Data]]);
        let get = parse_template(" RGET ", Role::Get, false).unwrap();
        assert_eq!(get.args, vec![vec![Part::Literal(b"RGET".to_vec())], vec![Part::Key]]);
    }

    #[test]
    fn placeholders_may_sit_inside_an_argument() {
        let t = parse_template("SET k:__key__:x __data__ user:__rand_int__", Role::Set, false).unwrap();
        assert_eq!(t.args[1], vec![Part::Literal(b"k:".to_vec()), Part::Key, Part::Literal(b":x".to_vec())]);
        assert_eq!(t.args[3], vec![Part::Literal(b"user:".to_vec()), Part::RandInt]);
        assert!(t.uses_rand_int && t.uses_data && t.uses_key);
    }

    #[test]
    fn bad_templates_say_why() {
        assert_eq!(parse_template("   ", Role::Set, false).unwrap_err().0, "is empty");
        assert!(
            parse_template("SET __key__ __value__", Role::Set, false)
                .unwrap_err()
                .0
                .starts_with("has unknown placeholder __value__")
        );
        assert_eq!(parse_template("SET foo", Role::Set, false).unwrap_err().0, "has no __key__ placeholder");
        assert_eq!(
            parse_template("__key__ SET", Role::Set, false).unwrap_err().0,
            "must start with a command name, not a placeholder"
        );
        assert!(parse_template("SET ___key__", Role::Set, false).unwrap_err().0.contains("___key__"));
    }

    #[test]
    fn quotes_keep_spaces_and_unicode_spaces_never_separate() {
        let t = parse_template("HSET __key__ \"my field\\x21\" 'it\\'s' __data__", Role::Set, false).unwrap();
        assert_eq!(t.args[2], vec![Part::Literal(b"my field!".to_vec())]);
        assert_eq!(t.args[3], vec![Part::Literal(b"it's".to_vec())]);
        for text in ["SET\u{a0}__key__", "SET __key__\u{85}x", "\u{feff}GET __key__", "GET __key__\n"] {
            assert!(parse_template(text, Role::Get, false).unwrap_err().0.contains("outside quotes"), "{text:?}");
        }
        assert_eq!(parse_template("GET \"__key__", Role::Get, false).unwrap_err().0, "has an unclosed double quote");
        assert!(parse_template("GET '__key__'", Role::Get, false).is_err(), "no placeholder inside single quotes");
    }
}
