//! The crate's modules depend on each other one way only (issue 19: "no
//! module or type cycle"). This reads every file under `src/`, finds each
//! module's references to another (`crate::x`, `super::x`, grouped
//! `use crate::{x, y}`; comments and string literals do not count) and fails
//! naming every cycle. A path through a re-export of the crate root
//! (`crate::Plan`) counts as a reference to the module the root takes it from.
//!
//! Not a compiler: it reads paths as text. It is told how to read `src/` (a
//! module per file, `mod x { … }` blocks inside a file), which is all this
//! crate uses.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Cycles allowed on purpose, each as its modules' names sorted. None: the
/// last one (connection <-> handshake) went with the engine-core rework of
/// issue 19. The check also fails while this names a cycle that no longer
/// exists, so an entry cannot go stale.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// A module's path below the crate root: `["plan"]`, `["a", "b"]` for
/// `src/a/b.rs`; the root (`lib.rs`) is `[]`.
type ModPath = Vec<String>;

#[test]
fn the_crate_has_no_module_cycle_but_the_known_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    assert!(files.len() > 10, "found only {} source files under {}", files.len(), src.display());
    let graph = module_graph(&files);
    assert!(graph.contains_key(&vec!["plan".to_string()]), "the reader found no `plan` module");
    let known: BTreeSet<Vec<String>> =
        KNOWN_CYCLES.iter().map(|c| c.iter().map(|m| m.to_string()).collect::<Vec<_>>()).collect();
    let mut failures = Vec::new();
    let mut seen_known = BTreeSet::new();
    for component in cycles(&graph) {
        let names: Vec<String> = component.iter().map(|m| m.join("::")).collect();
        let mut sorted = names.clone();
        sorted.sort();
        if known.contains(&sorted) {
            seen_known.insert(sorted);
            continue;
        }
        failures.push(format!("module cycle: {}", describe_cycle(&graph, &component)));
    }
    for gone in known.difference(&seen_known) {
        failures.push(format!(
            "KNOWN_CYCLES lists {} but there is no such cycle any more: remove it from the list",
            gone.join(" <-> ")
        ));
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// The check itself: a cycle through three files, and one that goes through
/// a root re-export and a grouped `use`, are found; `super::*` in a test
/// module, a path in a comment or a string, and `pub(crate)` are not references.
#[test]
fn the_reader_finds_cycles_through_paths_groups_and_re_exports() {
    let files = vec![
        (vec![], "mod a;\nmod b;\nmod c;\nmod d;\npub use d::Thing;\n".to_string()),
        (vec!["a".into()], "use crate::b::X;\n// crate::d::no\nconst S: &str = \"crate::d\";\n".to_string()),
        (vec!["b".into()], "pub(crate) fn f() { crate::c::g() }\n#[cfg(test)]\nmod tests { use super::*; }\n".into()),
        (vec!["c".into()], "use crate::{self as me, a::Y};\nfn h() -> char { '{' }\n".to_string()),
        (vec!["d".into()], "pub struct Thing;\n".to_string()),
    ];
    let graph = module_graph(&files);
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(describe_cycle(&graph, &found[0]), "a -> b -> c -> a");
    assert!(graph[&vec!["b".to_string()]].iter().all(|m| m != &vec!["b".to_string()]), "super::* is not an edge");

    let with_root = vec![
        (vec![], "mod a;\nmod d;\npub use d::Thing;\n".to_string()),
        (vec!["a".into()], "fn f(_: crate::Thing) {}\n".to_string()),
        (vec!["d".into()], "mod inner {\n    use super::super::a;\n}\n".to_string()),
    ];
    let graph = module_graph(&with_root);
    let found = cycles(&graph);
    assert_eq!(found.iter().map(|c| describe_cycle(&graph, c)).collect::<Vec<_>>(), vec!["a -> d -> a"]);
}

fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(ModPath, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read src/").flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(root).expect("under src/").with_extension("");
        let mut module: ModPath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if module == ["lib"] || module.last().is_some_and(|last| last == "mod") {
            module.pop();
        }
        out.push((module, fs::read_to_string(&path).expect("read a source file")));
    }
}

/// Each module (by path) and the other modules it names.
fn module_graph(files: &[(ModPath, String)]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let modules: BTreeSet<ModPath> = files.iter().map(|(m, _)| m.clone()).filter(|m| !m.is_empty()).collect();
    let root_items = root_re_exports(files, &modules);
    let mut graph: BTreeMap<ModPath, BTreeSet<ModPath>> =
        modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (module, text) in files {
        if module.is_empty() {
            continue;
        }
        for path in referenced_paths(module, &code_only(text)) {
            let target = resolve(&path, &modules, &root_items);
            if let Some(target) = target.filter(|t| t != module) {
                graph.get_mut(module).expect("a module").insert(target);
            }
        }
    }
    graph
}

/// The module a path from the crate root names: the longest known module
/// prefix, or the module a root re-export comes from.
fn resolve(path: &[String], modules: &BTreeSet<ModPath>, root_items: &BTreeMap<String, ModPath>) -> Option<ModPath> {
    for len in (1..=path.len()).rev() {
        if modules.contains(&path[..len].to_vec()) {
            return Some(path[..len].to_vec());
        }
    }
    path.first().and_then(|first| root_items.get(first).cloned())
}

/// `pub use module::{A, B};` in lib.rs: the names the root takes from a module.
fn root_re_exports(files: &[(ModPath, String)], modules: &BTreeSet<ModPath>) -> BTreeMap<String, ModPath> {
    let mut items = BTreeMap::new();
    let Some((_, text)) = files.iter().find(|(m, _)| m.is_empty()) else {
        return items;
    };
    let code = code_only(text);
    for statement in code.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim().trim_start_matches("crate::").trim_start_matches("self::");
        let Some((first, tail)) = rest.split_once("::") else {
            continue;
        };
        let module = vec![first.trim().to_string()];
        if !modules.contains(&module) {
            continue;
        }
        let names = tail.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or(name).rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                items.insert(name.to_string(), module.clone());
            }
        }
    }
    items
}

/// The source with comments, string and char literals blanked (newlines kept),
/// so only code is read.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            continue;
        }
        // r"…", r#"…"#, br"…": a raw string ends at `"` and as many `#`.
        let raw_start = c[i] == 'r' && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))));
        if raw_start {
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                j += 1;
                while j < c.len() && !(c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#'))) {
                    blank(&mut out, c[j]);
                    j += 1;
                }
                out.push(' ');
                i = j + 1 + hashes;
                continue;
            }
        }
        if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            out.push(' ');
            i += 1;
            continue;
        }
        // A char literal ('x', '\n', '\u{1F}'); a lifetime ('a) is left as it is.
        if c[i] == '\'' {
            if next == Some('\\') {
                // The escaped char is at i + 2 (it may be a quote itself).
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                out.push(' ');
                i = j + 1;
                continue;
            }
            if c.get(i + 2) == Some(&'\'') {
                out.push(' ');
                i += 3;
                continue;
            }
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// Every path from the crate root that `module`'s code names, as segments:
/// `crate::a::b` → `[a, b]`; `super::x` in a file's top level → `x` beside
/// the file's module, inside a `mod tests { … }` block → the file's own
/// module; `crate::{a, b::c}` → `[a]`, `[b, c]`.
fn referenced_paths(module: &ModPath, code: &str) -> Vec<Vec<String>> {
    let c: Vec<char> = code.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let skip_space = |mut i: usize| {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let word_at = |i: usize| {
        let mut j = i;
        while j < c.len() && ident(c[j]) {
            j += 1;
        }
        (c[i..j].iter().collect::<String>(), j)
    };
    let colons_at = |i: usize| {
        let j = skip_space(i);
        (c.get(j) == Some(&':') && c.get(j + 1) == Some(&':')).then(|| skip_space(j + 2))
    };
    // `ident(::ident)*` from i; stops at a group or anything else.
    let segments_at = |mut i: usize| {
        let mut segs = Vec::new();
        loop {
            let (word, end) = word_at(i);
            if word.is_empty() {
                return (segs, i);
            }
            segs.push(word);
            match colons_at(end) {
                Some(next) => i = next,
                None => return (segs, end),
            }
        }
    };

    let mut paths = Vec::new();
    // Brace depth, and the depths at which inline `mod x {` blocks opened.
    let mut depth = 0usize;
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut pending_mod = false;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '{' {
            if pending_mod {
                inline_mods.push(depth);
                pending_mod = false;
            }
            depth += 1;
            i += 1;
            continue;
        }
        if ch == '}' {
            depth = depth.saturating_sub(1);
            if inline_mods.last() == Some(&depth) {
                inline_mods.pop();
            }
            i += 1;
            continue;
        }
        if ch == ';' {
            pending_mod = false;
        }
        if !ident(ch) || (i > 0 && ident(c[i - 1])) {
            i += 1;
            continue;
        }
        let (word, end) = word_at(i);
        if word == "mod" {
            pending_mod = true;
            i = end;
            continue;
        }
        let base: Option<(ModPath, usize)> = match word.as_str() {
            "crate" => colons_at(end).map(|next| (Vec::new(), next)),
            "super" => {
                // Each `super` leaves one inline block, then one file module.
                let mut ups = 0;
                let mut at = end;
                let mut next = colons_at(end);
                while let Some(n) = next {
                    ups += 1;
                    at = n;
                    let (w, e) = word_at(n);
                    if w != "super" {
                        break;
                    }
                    next = colons_at(e);
                    if next.is_none() {
                        at = e;
                    }
                }
                (ups > 0).then(|| {
                    let inline = ups.min(inline_mods.len());
                    let mut base = module.clone();
                    for _ in inline..ups {
                        base.pop();
                    }
                    // Still inside the file: the path names the file's own module's items.
                    if inline == ups { (module.clone(), at) } else { (base, at) }
                })
            }
            _ => None,
        };
        let Some((base, at)) = base else {
            i = end;
            continue;
        };
        if c.get(at) == Some(&'{') {
            // A group: each top-level item is a path of its own.
            let mut j = at + 1;
            let mut level = 1;
            let mut item_start = j;
            while j < c.len() && level > 0 {
                match c[j] {
                    '{' => level += 1,
                    '}' => level -= 1,
                    ',' if level == 1 => {
                        let (segs, _) = segments_at(skip_space(item_start));
                        push_path(&mut paths, &base, segs);
                        item_start = j + 1;
                    }
                    _ => {}
                }
                if level == 0 {
                    let (segs, _) = segments_at(skip_space(item_start));
                    push_path(&mut paths, &base, segs);
                }
                j += 1;
            }
            i = j;
        } else {
            let (segs, stop) = segments_at(at);
            push_path(&mut paths, &base, segs);
            i = stop.max(end);
        }
    }
    paths
}

fn push_path(paths: &mut Vec<Vec<String>>, base: &ModPath, segs: Vec<String>) {
    let segs: Vec<String> = segs.into_iter().filter(|s| s != "self").collect();
    if segs.is_empty() || segs[0] == "super" {
        return;
    }
    let mut path = base.clone();
    path.extend(segs);
    paths.push(path);
}

/// The graph's strongly connected components of more than one module
/// (Tarjan's algorithm): each holds at least one cycle.
fn cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'g ModPath, usize>,
        low: BTreeMap<&'g ModPath, usize>,
        stack: Vec<&'g ModPath>,
        on_stack: BTreeSet<&'g ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g ModPath) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on_stack.insert(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let Some((u, _)) = w.graph.get_key_value(u) else { continue };
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(u);
                component.push(u.clone());
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

/// One cycle through a component, as `a -> b -> a`: the shortest way back
/// from its first module (breadth first, inside the component).
fn describe_cycle(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>, component: &[ModPath]) -> String {
    let members: BTreeSet<&ModPath> = component.iter().collect();
    let start = &component[0];
    let mut came_from: BTreeMap<&ModPath, &ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut last = None;
    'search: while let Some(v) = queue.pop_front() {
        for u in graph.get(v).into_iter().flatten().filter(|u| members.contains(u)) {
            if u == start {
                last = Some(v);
                break 'search;
            }
            if !came_from.contains_key(u) {
                came_from.insert(u, v);
                queue.push_back(u);
            }
        }
    }
    let mut path = vec![start.join("::")];
    let mut v = last.expect("a component holds a cycle back to its first module");
    let mut back = Vec::new();
    while v != start {
        back.push(v.join("::"));
        v = came_from[v];
    }
    back.reverse();
    path.extend(back);
    path.push(start.join("::"));
    path.join(" -> ")
}
