//! `docs/ARCHITECTURE.md` names no file that is not in the repository.
//!
//! Every token in backticks that looks like a path (it holds a `/` or ends in a source
//! extension) must name a file or folder of the workspace. The document names paths three ways,
//! and each is resolved as it is meant:
//! - from the workspace root (`shard-router/src/storage/db.rs`, `migrations/`);
//! - from a crate's `src/` in the sections on that crate's rooms (`routes/console.rs` is
//!   `api/src/routes/console.rs`, `map/hash.rs` is `shard-router/src/map/hash.rs`);
//! - by its last segments, in the rows that describe one folder's files (`pace.rs` in the row of
//!   `moves/`, `copy/binary.rs`, `catalog/{sqlite,postgres}` in the row of `migrations/`): some
//!   file or folder of the workspace ends with it.
//!
//! `{a,b}` alternatives are expanded (`catalog/{sqlite,postgres}` names both folders). URLs,
//! media types, placeholders, elisions and home folders (`/v1/admin/...`, `application/json`,
//! `<data_dir>`, `~/.cache`) are not paths of the repository and are left out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const EXTENSIONS: &[&str] = &[".rs", ".md", ".sql", ".sh", ".toml", ".json", ".yml", ".yaml", ".html", ".js", ".css"];

/// First segments of tokens that are media types, not paths.
const MEDIA_TYPES: &[&str] = &["application", "text", "image", "multipart"];

#[test]
fn architecture_names_only_files_that_exist() {
    let root = workspace();
    let document = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let tree = Tree::read(&root);
    let named = path_tokens(&document);
    assert!(named.len() > 100, "the document's paths are found: {}", named.len());
    let missing: Vec<&String> = named.iter().filter(|path| !tree.resolves(path)).collect();
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names files that are not in the repository: {missing:?}");
}

#[test]
fn a_made_up_name_is_reported() {
    let tree = Tree::read(&workspace());
    let document = "The routes live in `routes/console.rs`, the hash in `map/hash.rs`, the rest in \
                    `shard-router/src/storage/db.rs` and `migrations/catalog/{sqlite,postgres}`; \
                    the broker in `routes/broker.rs` and `shard-router/src/teleport.rs`, see \
                    `migrations/catalog/{sqlite,oracle}`. Not paths: `/v1/admin/...`, \
                    `application/json`, `<data_dir>/lock`.";
    let missing: Vec<String> = path_tokens(document).into_iter().filter(|path| !tree.resolves(path)).collect();
    assert_eq!(missing, ["migrations/catalog/oracle", "routes/broker.rs", "shard-router/src/teleport.rs"]);
}

/// The path-like tokens in backticks, with `{a,b}` expanded.
fn path_tokens(document: &str) -> BTreeSet<String> {
    let mut tokens = BTreeSet::new();
    for (i, token) in document.split('`').enumerate() {
        if i % 2 == 0 || token.is_empty() || token.contains(char::is_whitespace) {
            continue;
        }
        let pathlike = token.contains('/') || EXTENSIONS.iter().any(|ext| token.ends_with(ext));
        let not_a_path = token.starts_with(['/', '~'])
            || token.contains("://")
            || token.contains("...")
            || token.contains(['<', '>', '*', '?', '=', '$', '(', ')', '[', ']', ';', ':', '+'])
            || MEDIA_TYPES.iter().any(|media| token.starts_with(&format!("{media}/")));
        if pathlike && !not_a_path {
            tokens.extend(expand(token));
        }
    }
    tokens
}

/// `a/{b,c}/d` as `a/b/d` and `a/c/d`.
fn expand(token: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (token.find('{'), token.find('}')) else { return vec![token.to_owned()] };
    let (head, tail) = (&token[..open], &token[close + 1..]);
    token[open + 1..close].split(',').flat_map(|choice| expand(&format!("{head}{choice}{tail}"))).collect()
}

/// The workspace's files and folders, relative to its root, with `/` between segments.
struct Tree {
    paths: BTreeSet<String>,
    /// The top-level folders: the crates, `migrations`, `docs`, ...
    folders: Vec<String>,
}

impl Tree {
    fn read(root: &Path) -> Tree {
        let mut paths = BTreeSet::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
                let entry = entry.expect("a directory entry");
                let name = entry.file_name().to_string_lossy().into_owned();
                if dir == root && (name == ".git" || name == "target") {
                    continue;
                }
                let path = entry.path();
                let relative = path.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
                if entry.file_type().expect("a file type").is_dir() {
                    pending.push(path);
                }
                paths.insert(relative);
            }
        }
        let folders = paths.iter().filter(|path| !path.contains('/') && root.join(path).is_dir()).cloned().collect();
        Tree { paths, folders }
    }

    fn resolves(&self, token: &str) -> bool {
        let path = token.trim_end_matches('/');
        self.paths.contains(path)
            || self.folders.iter().any(|name| self.paths.contains(&format!("{name}/src/{path}")))
            || self.paths.iter().any(|p| p.ends_with(&format!("/{path}")))
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate sits in the workspace").to_owned()
}
