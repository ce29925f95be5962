//! Configuration errors in the gateway's own words: each names the file or the environment
//! variable exactly as the user wrote it, the key without the configuration library's profile
//! prefix, and, for a key that does not exist, the nearest one that does.

use std::path::{Path, PathBuf};

use figment::error::Kind;

/// Where a configuration value came from, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The configuration file, as given to `--config` or `SHARDGATE_CONFIG`.
    File(PathBuf),
    /// An environment variable, by name (`SHARDGATE_LISTEN`).
    Variable(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "configuration file {}", path.display()),
            Origin::Variable(name) => write!(f, "environment variable {name}"),
        }
    }
}

/// A configuration that cannot be loaded: one line per problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("; "))]
pub struct ConfigError {
    /// Each problem, a sentence.
    pub problems: Vec<String>,
}

impl ConfigError {
    /// The configuration file `path` (as given) does not exist or cannot be read.
    pub fn unreadable_file(path: &Path, e: &std::io::Error) -> Self {
        let problem = if e.kind() == std::io::ErrorKind::NotFound {
            format!("configuration file {} does not exist (given by --config or SHARDGATE_CONFIG)", path.display())
        } else {
            format!("cannot read configuration file {}: {e}", path.display())
        };
        Self { problems: vec![problem] }
    }

    /// Describes every error of `error`; `origin_of` tells where a value came from by the name
    /// of the configuration layer that gave it.
    pub fn describe(error: figment::Error, origin_of: impl Fn(&str) -> Option<Origin>) -> Self {
        let problems = error
            .into_iter()
            .map(|error| {
                let origin = error.metadata.as_ref().and_then(|metadata| origin_of(metadata.name.as_ref()));
                describe_one(&error.path, &error.kind, origin.as_ref())
            })
            .collect();
        Self { problems }
    }
}

fn describe_one(path: &[String], kind: &Kind, origin: Option<&Origin>) -> String {
    let from = origin.map(|origin| format!(" (from {origin})")).unwrap_or_default();
    match kind {
        Kind::UnknownField(field, expected) => {
            let parent = parent_of(path, field);
            let key = dotted(&parent, field);
            let hint = nearest(field, expected)
                .map(|near| format!("; did you mean {}?", spelled(origin, &parent, near)))
                .unwrap_or_default();
            match origin {
                Some(Origin::Variable(name)) => {
                    format!("environment variable {name} sets `{key}`, which is not a key of this configuration{hint}")
                }
                _ => format!("unknown configuration key `{key}`{from}{hint}"),
            }
        }
        Kind::MissingField(field) => {
            format!("configuration key `{}` is required{from}", dotted(&parent_of(path, field), field))
        }
        Kind::InvalidType(actual, expected) => {
            format!("configuration key `{}`{from} must be {expected}, not {actual}", path.join("."))
        }
        Kind::InvalidValue(actual, expected) => {
            format!("configuration key `{}`{from} must be {expected}, not {actual}", path.join("."))
        }
        Kind::UnknownVariant(variant, expected) => format!(
            "configuration key `{}`{from} cannot be {variant:?}: it is one of {}",
            path.join("."),
            expected.join(", ")
        ),
        Kind::Message(message) => {
            format!("configuration key `{}`{from} is invalid: {}", path.join("."), message.replace('`', "'"))
        }
        other => format!("configuration key `{}`{from} is invalid: {other}", path.join(".")),
    }
}

/// The path of the table holding `field` (the error's path may or may not end with it).
pub fn parent_of(path: &[String], field: &str) -> Vec<String> {
    match path.split_last() {
        Some((last, parent)) if last == field => parent.to_vec(),
        _ => path.to_vec(),
    }
}

fn dotted(parent: &[String], field: &str) -> String {
    parent.iter().map(String::as_str).chain([field]).collect::<Vec<_>>().join(".")
}

/// A key as the user would write it where the mistake was made: a variable's name, else the
/// dotted key.
fn spelled(origin: Option<&Origin>, parent: &[String], field: &str) -> String {
    match origin {
        Some(Origin::Variable(_)) => variable_of(parent, field),
        _ => format!("`{}`", dotted(parent, field)),
    }
}

/// The environment variable that sets `field` of the table at `parent`: `SHARDGATE_` and the
/// key's segments in capitals, joined by `__`.
pub fn variable_of(parent: &[String], field: &str) -> String {
    let segments: Vec<String> = parent.iter().map(String::as_str).chain([field]).map(str::to_uppercase).collect();
    format!("SHARDGATE_{}", segments.join("__"))
}

/// The valid key nearest to `field` by edit distance, if it is near enough to be a misspelling
/// (at most a third of its length, at least 2, edits away).
pub fn nearest<'a>(field: &str, valid: &[&'a str]) -> Option<&'a str> {
    let field = field.to_ascii_lowercase();
    let (best, distance) =
        valid.iter().map(|candidate| (*candidate, edit_distance(&field, candidate))).min_by_key(|(_, d)| *d)?;
    (distance <= (field.chars().count() / 3).max(2)).then_some(best)
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("listn", "listen"), 1);
        assert_eq!(edit_distance("embeded_shards", "embedded_shards"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(nearest("listn", &["listen", "data_dir", "log"]), Some("listen"));
        assert_eq!(nearest("bless", &["listen", "data_dir", "storage"]), None, "nothing near: no suggestion");
    }
}
