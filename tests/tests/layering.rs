//! The layering rules of DESIGN.md §7, checked on the source files themselves:
//! - no import cycle among the files of any crate (file A uses B, B uses A, directly or through
//!   other files);
//! - in `api`, no route module (a file under `src/routes/`) imports another route module: shared
//!   state and services sit below the routes;
//! - in `shard-router` and `api`, the rooms (top-level modules, [`ROOMS`]) stand in an order,
//!   lowest first, and no file of a room uses a file of a higher room (`storage` never reaches
//!   into `moves`).
//!
//! A file "uses" another when it names a path into it: `use crate::a::B`, `crate::a::b()`, or
//! `super::x`. A re-export (`pub use`, the facade of a `lib.rs` or a parent module) is not a use:
//! it makes a name visible without depending on it, and a path through a re-export is followed
//! to the file that defines the item.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The crates whose files are checked.
const CRATES: [&str; 6] = ["api", "gatekeeper", "shard-router", "index-tables", "valet", "cache"];

/// One crate's files: module path (`["routes", "records"]`) → file, and each file's references.
struct CrateSources {
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// Per file: (absolute module path named, line, whether the reference is a re-export).
    references: BTreeMap<PathBuf, Vec<(Vec<String>, usize, bool)>>,
    /// Per module file: re-exported name → the absolute path it stands for.
    reexports: HashMap<PathBuf, HashMap<String, Vec<String>>>,
}

#[test]
fn no_file_of_any_crate_is_part_of_an_import_cycle() {
    let mut cycles = Vec::new();
    for name in CRATES {
        let sources = CrateSources::read(&workspace().join(name).join("src"));
        let graph = sources.graph();
        for component in strongly_connected(&graph) {
            let mut lines = vec![format!("{name}: a cycle through {} files:", component.len())];
            for from in &component {
                for (to, line) in &graph[from] {
                    if component.contains(to) {
                        lines.push(format!("  {}:{line} uses {}", relative(from), relative(to)));
                    }
                }
            }
            cycles.push(lines.join("\n"));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn no_route_module_imports_another_route_module() {
    let sources = CrateSources::read(&workspace().join("api/src"));
    let routes = workspace().join("api/src/routes");
    let mut crossings = Vec::new();
    for (from, edges) in sources.graph() {
        if !from.starts_with(&routes) {
            continue;
        }
        for (to, line) in edges {
            if to.starts_with(&routes) {
                crossings.push(format!("{}:{line} uses {}", relative(&from), relative(&to)));
            }
        }
    }
    assert!(crossings.is_empty(), "route modules importing route modules:\n{}", crossings.join("\n"));
}

/// The rooms of a crate, lowest first: each is a list of top-level module names (a folder or a
/// file under `src/`). A file may use its own room and the rooms below it, never one above.
/// Every top-level module of the crate is in a room, so a new one must be placed (see
/// [`every_top_level_module_has_a_room`]); `lib.rs` and `main.rs` stand above all rooms.
const ROOMS: [(&str, &[&[&str]]); 2] = [
    (
        "shard-router",
        &[
            &["ids", "claims", "clock", "humantime_serde"],
            &["map"],
            &["storage", "error"],
            &["catalog"],
            &["config", "router", "topology", "usage"],
            &["moves"],
            &["balance"],
            &["check"],
        ],
    ),
    (
        "api",
        &[
            // The admin CLI: a client of the API over HTTP, using nothing of the server.
            &["cli"],
            &["config"],
            &["wire"],
            &["observability"],
            // The plumbing, the state every handler shares and the services below the routes use
            // one another (the state holds the gate and the valet checks; the front door and the
            // services read the state): one room.
            &["server", "app", "valet", "blobs"],
            &["routes"],
            &["startup"],
        ],
    ),
];

#[test]
fn no_room_uses_a_higher_room() {
    let mut violations = Vec::new();
    for (name, rooms) in ROOMS {
        let src = workspace().join(name).join("src");
        violations.extend(upward_uses(&CrateSources::read(&src), &src, rooms));
    }
    assert!(violations.is_empty(), "files using a higher room:\n{}", violations.join("\n"));
}

#[test]
fn every_top_level_module_has_a_room() {
    let mut unplaced = Vec::new();
    for (name, rooms) in ROOMS {
        let src = workspace().join(name).join("src");
        for path in CrateSources::read(&src).modules.keys() {
            if let Some(top) = path.first()
                && room_of(rooms, top).is_none()
            {
                unplaced.push(format!("{name}: module `{top}` is in no room of ROOMS"));
            }
        }
    }
    unplaced.dedup();
    assert!(unplaced.is_empty(), "{}", unplaced.join("\n"));
}

/// The room check sees a lower room using a higher one, through a re-export too, and lets a
/// higher room use a lower one.
#[test]
fn the_room_check_sees_a_use_of_a_higher_room() {
    let dir = std::env::temp_dir().join(format!("layering-rooms-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("storage")).unwrap();
    std::fs::create_dir_all(src.join("moves")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod storage;\npub mod moves;\npub use moves::Job;\n").unwrap();
    std::fs::write(src.join("storage/mod.rs"), "pub mod shard;\n").unwrap();
    std::fs::write(src.join("storage/shard.rs"), "pub fn write() {}\nfn f() { let _ = crate::Job; }\n").unwrap();
    std::fs::write(src.join("moves/mod.rs"), "pub mod job;\npub use job::Job;\n").unwrap();
    std::fs::write(src.join("moves/job.rs"), "pub struct Job;\nfn g() { crate::storage::shard::write(); }\n").unwrap();
    let rooms: &[&[&str]] = &[&["storage"], &["moves"]];
    let violations = upward_uses(&CrateSources::read(&src), &src, rooms);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].contains("storage/shard.rs:2 (room `storage`) uses") && violations[0].contains("moves/job.rs")
    );
}

/// The room (index into `rooms`) of a top-level module.
fn room_of(rooms: &[&[&str]], top: &str) -> Option<usize> {
    rooms.iter().position(|room| room.contains(&top))
}

/// Every use, in the crate under `src`, of a file in a higher room than the user's.
fn upward_uses(sources: &CrateSources, src: &Path, rooms: &[&[&str]]) -> Vec<String> {
    let room_of_file = |file: &Path| module_path(src, file).first().and_then(|top| room_of(rooms, top));
    let mut violations = Vec::new();
    for (from, edges) in sources.graph() {
        let Some(low) = room_of_file(&from) else { continue };
        for (to, line) in edges {
            if let Some(high) = room_of_file(&to)
                && high > low
            {
                let room = &module_path(src, &from)[0];
                violations.push(format!("{}:{line} (room `{room}`) uses {}", relative(&from), relative(&to)));
            }
        }
    }
    violations
}

/// The checker itself finds what it must: a two-file cycle through a re-export, and a child
/// importing its parent (which is fine alone).
#[test]
fn the_checker_sees_a_cycle_through_a_reexport() {
    let dir = std::env::temp_dir().join(format!("layering-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub use b::Thing;\n").unwrap();
    std::fs::write(src.join("a.rs"), "mod inner;\nuse crate::Thing; // through the facade\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "use super::super::b::other;\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct Thing;\npub fn other() { crate::a::helper(); }\n").unwrap();
    let graph = CrateSources::read(&src).graph();
    let components = strongly_connected(&graph);
    std::fs::remove_dir_all(&dir).unwrap();
    let names: Vec<Vec<String>> = components
        .iter()
        .map(|c| c.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect())
        .collect();
    assert_eq!(names, vec![vec!["a.rs".to_owned(), "b.rs".to_owned()]]);
    assert!(graph[&src.join("a/inner.rs")].iter().any(|(to, _)| to.ends_with("b.rs")));
    assert!(graph[&src.join("lib.rs")].is_empty(), "re-exports are not uses");
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate sits in the workspace").to_owned()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).display().to_string()
}

impl CrateSources {
    fn read(src: &Path) -> Self {
        let mut modules = BTreeMap::new();
        let mut files = Vec::new();
        collect_files(src, &mut files);
        for file in &files {
            modules.insert(module_path(src, file), file.clone());
        }
        let mut references = BTreeMap::new();
        let mut reexports = HashMap::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("readable source");
            let found = references_in(&strip_comments_and_strings(&text), &module_path(src, file), &modules);
            let names = reexports.entry(file.clone()).or_insert_with(HashMap::new);
            for (path, _, reexport) in &found {
                if *reexport && let Some(last) = path.last() {
                    names.insert(last.clone(), path.clone());
                }
            }
            references.insert(file.clone(), found);
        }
        Self { modules, references, reexports }
    }

    /// File → the files it uses, with the line of the first use.
    fn graph(&self) -> BTreeMap<PathBuf, Vec<(PathBuf, usize)>> {
        let mut graph = BTreeMap::new();
        for (file, references) in &self.references {
            let mut edges: BTreeMap<PathBuf, usize> = BTreeMap::new();
            for (path, line, reexport) in references {
                if *reexport {
                    continue;
                }
                if let Some(target) = self.resolve(path, 0)
                    && &target != file
                {
                    edges.entry(target).or_insert(*line);
                }
            }
            graph.insert(file.clone(), edges.into_iter().collect());
        }
        graph
    }

    /// The file defining what `path` names: the deepest module it enters, or, when the next
    /// segment is a re-export of that module, the file the re-export points to.
    fn resolve(&self, path: &[String], depth: usize) -> Option<PathBuf> {
        let deepest = (0..=path.len()).rev().find(|&n| self.modules.contains_key(&path[..n]))?;
        let file = &self.modules[&path[..deepest]];
        if depth < 8
            && let Some(name) = path.get(deepest)
            && let Some(target) = self.reexports.get(file).and_then(|names| names.get(name))
            && target.as_slice() != path
        {
            let mut followed = target.clone();
            followed.extend_from_slice(&path[deepest + 1..]);
            return self.resolve(&followed, depth + 1);
        }
        Some(file.clone())
    }
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("readable dir").map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// `src/lib.rs` → `[]`, `src/a.rs` and `src/a/mod.rs` → `["a"]`, `src/a/b.rs` → `["a", "b"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        file.strip_prefix(src).unwrap().iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !(parts.is_empty() && (stem == "lib" || stem == "main")) && stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

/// Blanks out comments and the insides of string and character literals, keeping line breaks.
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !is_ident(chars.get(i.wrapping_sub(1))) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some('\n') => out.push('\n'),
                    _ => {}
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                } else if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: skip to its closing quote.
            let close = (i + 2..chars.len()).find(|&j| chars[j] == '\'').unwrap_or(chars.len() - 1);
            out.push_str("' '");
            i = close + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Every path into the crate in a file (`crate::…`, `super::…`, `self::…`, or starting with a
/// child module's name), made absolute, with its line and whether it stands in a `pub use` (a
/// re-export). Tracks inline `mod name { … }` blocks, so that `super` inside `mod tests` means
/// the file's own module.
fn references_in(
    text: &str,
    file_module: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<(Vec<String>, usize, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new(); // (module name, brace depth it opened at)
    let mut depth = 0usize;
    let mut line = 1;
    let mut statement_is_pub_use = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => line += 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            ';' => statement_is_pub_use = false,
            _ => {}
        }
        if is_ident(Some(&c)) && !is_ident(chars.get(i.wrapping_sub(1))) && !(i > 0 && chars[i - 1] == ':') {
            let word: String = chars[i..].iter().take_while(|c| is_ident(Some(c))).collect();
            let after = i + word.len();
            if word == "pub" {
                let rest: String = chars[after..].iter().take(40).collect();
                let rest = rest.trim_start();
                let rest = rest.strip_prefix("(crate)").unwrap_or(rest).trim_start();
                statement_is_pub_use = rest.starts_with("use ");
            } else if word == "mod" {
                let rest: String = chars[after..].iter().take_while(|c| **c != ';' && **c != '{').collect();
                if chars.get(after + rest.len()) == Some(&'{') {
                    inline.push((rest.trim().to_owned(), depth));
                }
            } else if chars.get(after) == Some(&':') && chars.get(after + 1) == Some(&':') {
                let mut base: Vec<String> = file_module.to_vec();
                base.extend(inline.iter().map(|(name, _)| name.clone()));
                let child = [base.as_slice(), std::slice::from_ref(&word)].concat();
                if !matches!(word.as_str(), "crate" | "super" | "self") && !modules.contains_key(&child) {
                    i = after;
                    continue;
                }
                let (tree, consumed) = path_tree(&chars[i..]);
                for path in tree {
                    let mut absolute = if path[0] == "crate" { Vec::new() } else { base.clone() };
                    let mut segments = path.iter();
                    for segment in segments.by_ref() {
                        match segment.as_str() {
                            "crate" => {}
                            "super" => {
                                absolute.pop();
                            }
                            "self" => {}
                            other => {
                                absolute.push(other.to_owned());
                                break;
                            }
                        }
                    }
                    absolute.extend(segments.filter(|s| *s != "self").cloned());
                    found.push((absolute, line, statement_is_pub_use));
                }
                line += chars[i..i + consumed].iter().filter(|c| **c == '\n').count();
                i += consumed;
                continue;
            }
            i = after;
            continue;
        }
        i += 1;
    }
    found
}

/// Parses a path such as `crate::a::{b, c::{d, e}}` from the start of `chars`: the full paths it
/// names and how many characters it spans.
fn path_tree(chars: &[char]) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = 0;
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        let word: String = chars[i..].iter().take_while(|c| is_ident(Some(c))).collect();
        if word.is_empty() {
            if chars.get(i) == Some(&'{') {
                let mut paths = Vec::new();
                i += 1;
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => return (paths, i),
                        Some('}') => return (paths, i + 1),
                        _ => {}
                    }
                    let (inner, used) = path_tree(&chars[i..]);
                    for path in inner {
                        let mut full = prefix.clone();
                        full.extend(path);
                        paths.push(full);
                    }
                    i += used.max(1);
                }
            }
            return (vec![prefix], i);
        }
        i += word.len();
        if word != "self" || prefix.is_empty() {
            prefix.push(word);
        }
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            // `as alias` and anything else after the last segment end the path.
            return (vec![prefix], i);
        }
    }
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<PathBuf, Vec<(PathBuf, usize)>>) -> Vec<BTreeSet<PathBuf>> {
    struct State<'a> {
        graph: &'a BTreeMap<PathBuf, Vec<(PathBuf, usize)>>,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        components: Vec<BTreeSet<PathBuf>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a PathBuf) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        for (next, _) in state.graph.get(node).into_iter().flatten() {
            let Some((next, _)) = state.graph.get_key_value(next) else { continue };
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[next].min(state.low[node]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.index[next].min(state.low[node]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.insert(top.clone());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                state.components.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}
