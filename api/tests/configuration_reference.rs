//! `docs/configuration.md` is generated from the configuration types, and this test fails when
//! the committed file drifts from them. Rewrite it with
//! `SHARDGATE_BLESS=1 cargo test -p shardgate-api --test configuration_reference`.
//!
//! Where each part comes from:
//! - the keys, their types and their descriptions: the source files of the configuration types,
//!   parsed with `syn` (each field's doc comment is its description; serde's `rename` and
//!   `rename_all` are followed);
//! - the defaults: `Config::default()` and `GatekeeperConfig::default()`, serialised (durations
//!   are shown as they are written in TOML, secrets never);
//! - the environment variables: the loader's rule (`SHARDGATE_`, then the key with `.` as `__`),
//!   which `every_generated_variable_is_one_the_loader_takes` checks against the loader itself.
//!
//! The reference is exhaustive by construction: the walk starts at `Config` and
//! `GatekeeperConfig` and writes an entry for every field of every type it meets; a field type it
//! does not know how to show stops it with the key's name, and a parsed field set that differs
//! from what serde writes for the type stops it too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use shardgate_api::config::{Config, GatekeeperConfig};

/// The files that hold the configuration types, relative to the workspace root; `file#Type` takes
/// only that type of a file that holds others. A type the walk meets that none of them defines
/// stops the generation, naming it.
const SOURCES: &[&str] = &[
    "api/src/config/mod.rs",
    "api/src/config/proxies.rs",
    "api/src/config/telemetry.rs",
    "api/src/config/usage.rs",
    "shard-router/src/config.rs",
    "shard-router/src/map/quotas.rs#Quotas",
    "shard-router/src/storage/db.rs",
    "shard-router/src/storage/health.rs",
    "shard-router/src/storage/batch.rs",
    "shard-router/src/storage/replicas.rs#ReplicaReadsConfig",
    "shard-router/src/balance/plan.rs",
    "gatekeeper/src/config.rs",
    "gatekeeper/src/throttle.rs",
    "cache/src/config.rs",
];

/// Defaults that depend on the machine: the reference says how they are computed, and
/// `computed_defaults_are_what_the_reference_says` checks the sentence.
const COMPUTED_DEFAULTS: &[(&str, &str)] = &[("storage.pool.max_connections", "twice the number of CPUs")];

/// What a key of a table of named entries stands for (`rate_limits.tiers.<tier>`).
const ENTRY_NAMES: &[(&str, &str)] = &[
    ("rate_limits.tiers", "tier"),
    ("cache.collection_ttl", "collection"),
    ("telemetry.headers", "header"),
    ("storage.latency_budgets", "shard"),
    ("storage.replica_reads.collections", "collection"),
];

const PREAMBLE: &str = "\
# Configuration reference

<!-- Generated from the configuration types by api/tests/configuration_reference.rs: edit the
     doc comments of the types, then run
     SHARDGATE_BLESS=1 cargo test -p shardgate-api --test configuration_reference -->

Every key `shardgate serve` and `shardgate gatekeeper` take, with its type, its default, its
environment variable and what it does. The descriptions are the doc comments of the
configuration types, the defaults are the types' own, and a test fails when this file and the
code disagree.

## How configuration is loaded

Three layers, each over the one before:

1. the defaults (below);
2. a TOML file, if one is given: `--config FILE` or `SHARDGATE_CONFIG=FILE`;
3. environment variables: `SHARDGATE_` and the key in capitals, with `__` between nested keys
   (`storage.pool.max_connections` is `SHARDGATE_STORAGE__POOL__MAX_CONNECTIONS`). A value is
   read as TOML would read it where it can be (`20`, `true`, `[\"a\", \"b\"]`,
   `[{id = \"shard-1\", url = \"postgres://...\"}]`) and as a string otherwise (`30s`,
   `0.0.0.0:8080`).

An unknown key in the file and a bad value anywhere are errors that name the key and where it
came from (the file as given, or the variable), with the nearest valid key; so is a
configuration file that does not exist:

```text
error: invalid configuration: unknown configuration key `storage.embeded_shards` (from configuration file shardgate.toml); did you mean `storage.embedded_shards`?
error: invalid configuration: configuration key `listen` (from environment variable SHARDGATE_LISTEN) is invalid: invalid socket address syntax
error: invalid configuration: configuration file nope.toml does not exist (given by --config or SHARDGATE_CONFIG)
```

A `SHARDGATE_*`
variable that names no key is left out with a warning naming the nearest variable (platforms set
variables of their own under the prefix: Kubernetes sets `SHARDGATE_PORT` and the like for a
Service named `shardgate`). `SHARDGATE_CONFIG` and `SHARDGATE_BLESS` (the tests' switch) are not
keys. Flags win over all three: `--data-dir` (`data_dir`), `serve --listen` and `--trusted`,
`gatekeeper --upstream` and `--listen`.

Durations are written with a unit: `250ms`, `5s`, `10m`, `1h`, `1d` (a bare number is seconds).
Secrets (database and Redis URLs, HS256 secrets, the internal secret) are never shown here, in
logs or in `Debug` output; pass them as environment variables or in a file only the service
reads. A key under a list (`auth.issuers[].issuer`) has no variable of its own: set the whole
list in the file, or in the list's variable as an inline TOML array.
";

#[test]
fn committed_configuration_reference_matches_the_code() {
    let generated = generate();
    let path = workspace().join("docs/configuration.md");
    if std::env::var_os("SHARDGATE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/configuration.md");
    }
    let committed = std::fs::read_to_string(&path).expect("docs/configuration.md exists");
    assert!(
        committed == generated,
        "docs/configuration.md is out of date: run `SHARDGATE_BLESS=1 cargo test -p shardgate-api --test \
         configuration_reference`"
    );
}

#[test]
fn every_field_of_every_configuration_type_has_an_entry() {
    let types = parse_sources();
    let entries = serve_entries(&types);
    let keys: BTreeSet<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    // Each field of each struct the walk reached, by its serialised name, is some entry's last
    // segment under that struct's key: checked per struct while walking; here, the total.
    let reached = reached_structs(&types);
    for name in types.keys().filter(|name| matches!(types[*name].kind, Kind::Struct { .. })) {
        assert!(reached.contains(name.as_str()), "the configuration type {name} is in no section of the reference");
    }
    for key in
        ["listen", "storage.pool.breaker.stall_after", "auth.issuers[].jwks_url", "rate_limits.tiers.<tier>.burst"]
    {
        assert!(keys.contains(key), "no entry for `{key}`");
    }
    let generated = generate();
    for entry in &entries {
        assert!(generated.contains(&format!("### `{}`\n", entry.key)), "`{}` is not in the reference", entry.key);
    }
}

#[test]
fn secrets_show_no_value_and_durations_show_as_written() {
    let mut config = Config::default();
    config.storage.catalog_url = Some("postgres://u:hunter2@db/catalog".to_owned().into());
    config.cache.redis_url = Some("redis://:hunter2@cache".to_owned().into());
    config.rate_limits.redis_url = Some("redis://:hunter2@limits".to_owned().into());
    config.internal.secret = Some("hunter2hunter2hunter2hunter2hunter2".to_owned().into());
    config.auth.issuers.push(shardgate_gatekeeper::IssuerConfig::hs256(
        "issuer",
        "hunter2hunter2hunter2hunter2hunter2".to_owned().into(),
    ));
    let written = serde_json::to_string(&config).expect("a configuration serialises");
    assert!(!written.contains("hunter2"), "a secret was written: {written}");
    assert!(written.contains(shardgate_shard_router::config::REDACTED), "a set secret says it is set: {written}");

    let generated = generate();
    let entry = |key: &str| {
        let start = generated.find(&format!("### `{key}`\n")).unwrap_or_else(|| panic!("no entry `{key}`"));
        generated[start..].split("\n\n").nth(1).expect("the entry's facts").to_owned()
    };
    assert!(entry("limits.request_timeout").contains("default `\"30s\"`"), "{}", entry("limits.request_timeout"));
    assert!(entry("storage.pool.breaker.stall_after").contains("default `\"300ms\"`"));
    assert!(entry("balancer.cooldown").contains("default `\"30m\"`"));
    assert!(entry("storage.catalog_url").contains("secret"), "{}", entry("storage.catalog_url"));
    assert!(entry("storage.catalog_url").contains("unset"));
}

#[test]
fn every_generated_variable_is_one_the_loader_takes() {
    let types = parse_sources();
    let entries = serve_entries(&types);
    // Setting each scalar key's variable to its default loads, and no variable is reported as
    // naming no key: the loader takes every name the reference gives.
    let mut checked = 0;
    for vars in settable(&entries) {
        let loaded = Config::load_from(None, &vars).unwrap_or_else(|e| panic!("{vars:?} (defaults) do not load: {e}"));
        assert!(loaded.unknown_env.is_empty(), "{vars:?}: some name no key: {:?}", loaded.unknown_env);
        checked += vars.len();
    }
    assert!(checked > 80, "only {checked} variables checked");
    // A key of a table without defaults of its own does not load alone, as the reference says.
    let anonymous = entries.iter().find(|e| e.key == "rate_limits.anonymous.per_second").expect("an entry");
    assert!(anonymous.together, "the reference says to set it with the other keys of its table");
    let alone = [(anonymous.env.as_deref().expect("a variable"), "50")];
    assert!(Config::load_from(None, &alone).is_err(), "rate_limits.anonymous.burst is required with it");
    // The check is not vacuous: a name off the rule is reported.
    let loaded = Config::load_from(None, &[("SHARDGATE_STORAGE_POOL_MAX_CONNECTIONS", "3")]).unwrap();
    assert_eq!(loaded.unknown_env.len(), 1, "a single underscore does not nest");

    // And the variables change what they name: a few, by the names the reference gives them.
    let variable = |key: &str| {
        entries
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.env.clone())
            .unwrap_or_else(|| panic!("the reference gives `{key}` no variable"))
    };
    let tier_rate = variable("rate_limits.tiers.<tier>.per_second").replace("<TIER>", "FREE");
    let tier_burst = variable("rate_limits.tiers.<tier>.burst").replace("<TIER>", "FREE");
    let vars = [
        (variable("storage.moves.copy_bytes_per_second"), "12345".to_owned()),
        (variable("balancer.mode"), "propose".to_owned()),
        (variable("cache.l1.max_bytes"), "777".to_owned()),
        (variable("storage.pool.breaker.stall_after"), "2s".to_owned()),
        (variable("valet.cors_allowed_origins"), r#"["https://app.example"]"#.to_owned()),
        (variable("storage.shards"), r#"[{id = "shard-9", url = "sqlite://elsewhere.db"}]"#.to_owned()),
        (tier_rate, "7".to_owned()),
        (tier_burst, "9".to_owned()),
    ];
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
    let loaded = Config::load_from(None, &pairs).expect("the variables load");
    assert!(loaded.unknown_env.is_empty(), "{:?}", loaded.unknown_env);
    let config = loaded.config;
    assert_eq!(config.storage.moves.copy_bytes_per_second, 12345);
    assert_eq!(config.balancer.mode, shardgate_shard_router::balance::Mode::Propose);
    assert_eq!(config.cache.l1.max_bytes, 777);
    assert_eq!(config.storage.pool.breaker.stall_after, std::time::Duration::from_secs(2));
    assert_eq!(config.valet.cors_allowed_origins, ["https://app.example"]);
    assert_eq!(config.storage.shards.len(), 1);
    assert_eq!(config.storage.shards[0].id.as_ref(), "shard-9");
    let free = config.rate_limits.tiers.get("free").expect("the free tier's limit");
    assert_eq!((free.per_second, free.burst), (7, 9));

    // The gatekeeper's keys follow the same rule.
    let gatekeeper = gatekeeper_entries(&types);
    let mut checked = 0;
    for vars in settable(&gatekeeper) {
        let loaded = GatekeeperConfig::load_from(None, &vars)
            .unwrap_or_else(|e| panic!("{vars:?} (defaults) do not load into the gatekeeper: {e}"));
        assert!(loaded.unknown_env.is_empty(), "{vars:?}: some name no gatekeeper key: {:?}", loaded.unknown_env);
        checked += vars.len();
    }
    assert!(checked > 25, "only {checked} gatekeeper variables checked");
    let upstream = gatekeeper.iter().find(|e| e.key == "upstream").and_then(|e| e.env.clone()).expect("upstream");
    let loaded = GatekeeperConfig::load_from(None, &[(upstream.as_str(), "http://10.0.0.5:8081")]).unwrap();
    assert_eq!(loaded.config.upstream.as_deref(), Some("http://10.0.0.5:8081"));
}

/// The variables of `entries` set to their defaults, one key at a time, except that the keys of
/// a table without defaults of its own are set together (as the reference says they must be).
fn settable(entries: &[Entry]) -> Vec<Vec<(&str, &str)>> {
    let mut alone = Vec::new();
    let mut tables: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for entry in entries {
        let (Some(variable), Some(value)) = (&entry.env, &entry.env_value) else { continue };
        if variable.contains('<') {
            continue;
        }
        if entry.together {
            let table = entry.key.rsplit_once('.').map_or("", |(table, _)| table);
            tables.entry(table).or_default().push((variable.as_str(), value.as_str()));
        } else {
            alone.push(vec![(variable.as_str(), value.as_str())]);
        }
    }
    alone.extend(tables.into_values());
    alone
}

#[test]
fn computed_defaults_are_what_the_reference_says() {
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    assert_eq!(Config::default().storage.pool.max_connections as usize, 2 * cpus, "twice the number of CPUs");
    let types = parse_sources();
    let entries = serve_entries(&types);
    for (key, _) in COMPUTED_DEFAULTS {
        assert!(entries.iter().any(|e| e.key == *key), "`{key}` is a key");
    }
}

// ---------------------------------------------------------------------------------------------
// The types, as parsed from their source files.

struct TypeDef {
    doc: String,
    kind: Kind,
}

enum Kind {
    Struct { fields: Vec<Field> },
    Enum { variants: Vec<(String, String)> },
}

struct Field {
    /// The name serde reads and writes.
    name: String,
    doc: String,
    ty: syn::Type,
    /// A missing value takes a default (the field's or the container's `#[serde(default)]`).
    defaulted: bool,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn parse_sources() -> BTreeMap<String, TypeDef> {
    let mut types = BTreeMap::new();
    for entry in SOURCES {
        let (source, only) = match entry.split_once('#') {
            Some((source, only)) => (source, Some(only)),
            None => (*entry, None),
        };
        let text = std::fs::read_to_string(workspace().join(source)).unwrap_or_else(|e| panic!("{source}: {e}"));
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{source} does not parse: {e}"));
        for item in &file.items {
            let named = match item {
                syn::Item::Struct(item) => Some(&item.ident),
                syn::Item::Enum(item) => Some(&item.ident),
                _ => None,
            };
            if only.is_some_and(|only| named.is_none_or(|name| name != only)) {
                continue;
            }
            let (name, def) = match item {
                syn::Item::Struct(item) if derives_deserialize(&item.attrs) => {
                    let container = serde_flags(&item.attrs);
                    let syn::Fields::Named(named) = &item.fields else { continue };
                    let fields = named
                        .named
                        .iter()
                        .map(|field| {
                            let flags = serde_flags(&field.attrs);
                            let ident = field.ident.as_ref().expect("a named field").to_string();
                            Field {
                                name: flags
                                    .rename
                                    .clone()
                                    .unwrap_or_else(|| rename(&ident, container.rename_all.as_deref())),
                                doc: doc_of(&field.attrs),
                                ty: field.ty.clone(),
                                defaulted: container.default || flags.default,
                            }
                        })
                        .collect();
                    (item.ident.to_string(), TypeDef { doc: doc_of(&item.attrs), kind: Kind::Struct { fields } })
                }
                syn::Item::Enum(item) if derives_deserialize(&item.attrs) => {
                    let container = serde_flags(&item.attrs);
                    let variants = item
                        .variants
                        .iter()
                        .map(|variant| {
                            assert!(
                                matches!(variant.fields, syn::Fields::Unit),
                                "{source}: {}::{} carries data: teach the reference to show it",
                                item.ident,
                                variant.ident
                            );
                            let name = serde_flags(&variant.attrs)
                                .rename
                                .unwrap_or_else(|| rename(&variant.ident.to_string(), container.rename_all.as_deref()));
                            (name, doc_of(&variant.attrs))
                        })
                        .collect();
                    (item.ident.to_string(), TypeDef { doc: doc_of(&item.attrs), kind: Kind::Enum { variants } })
                }
                _ => continue,
            };
            assert!(types.insert(name.clone(), def).is_none(), "two configuration types are called {name}");
        }
    }
    types
}

fn derives_deserialize(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|attr| {
        let mut found = false;
        attr.parse_nested_meta(|meta| {
            found |= meta.path.segments.last().is_some_and(|s| s.ident == "Deserialize");
            Ok(())
        })
        .expect("a derive list");
        found
    })
}

#[derive(Default)]
struct SerdeFlags {
    default: bool,
    rename: Option<String>,
    rename_all: Option<String>,
}

fn serde_flags(attrs: &[syn::Attribute]) -> SerdeFlags {
    let mut flags = SerdeFlags::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            let value = if meta.input.peek(syn::Token![=]) {
                Some(meta.value()?.parse::<syn::LitStr>()?.value())
            } else {
                None
            };
            match name.as_str() {
                "default" => flags.default = true,
                "rename" => flags.rename = value,
                "rename_all" => flags.rename_all = value,
                "flatten" | "alias" | "skip" | "skip_deserializing" | "untagged" | "tag" => {
                    panic!("#[serde({name})] on a configuration type: teach the reference to follow it")
                }
                _ => {}
            }
            Ok(())
        })
        .expect("a serde attribute");
    }
    flags
}

fn rename(ident: &str, rule: Option<&str>) -> String {
    match rule {
        None => ident.to_owned(),
        Some("snake_case") => {
            let mut out = String::new();
            for (i, c) in ident.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            }
            out
        }
        Some(other) => panic!("rename_all = {other:?}: teach the reference to follow it"),
    }
}

/// A doc comment as one text: lines joined, paragraphs kept, intra-doc links as plain code.
fn doc_of(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }),
                ..
            }) => Some(text.value().trim().to_owned()),
            _ => None,
        })
        .collect();
    let text = lines
        .split(String::is_empty)
        .map(|paragraph| paragraph.join(" "))
        .filter(|paragraph| !paragraph.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    text.replace("[`", "`").replace("`]", "`")
}

// ---------------------------------------------------------------------------------------------
// The walk: one entry per key.

struct Entry {
    key: String,
    /// The section (top-level key) it is listed under; empty for top-level scalars.
    section: String,
    kind: String,
    default: String,
    env: Option<String>,
    /// Its default as an environment variable's value, for scalar keys with a default.
    env_value: Option<String>,
    /// Its table has no defaults of its own: a variable for it takes effect only with one for
    /// each other key of the table (or one for the whole table).
    together: bool,
    doc: String,
}

/// The last path segment of a type and its generic arguments.
fn split_type(ty: &syn::Type) -> (String, Vec<syn::Type>) {
    let syn::Type::Path(path) = ty else { panic!("a configuration field of a type that is not a path") };
    let last = path.path.segments.last().expect("a type name");
    let args = match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                syn::GenericArgument::Type(ty) => Some(ty.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    (last.ident.to_string(), args)
}

fn scalar_kind(name: &str) -> Option<&'static str> {
    Some(match name {
        "bool" => "boolean",
        "u16" | "u32" | "u64" | "usize" => "integer",
        "f64" => "number",
        "String" => "string",
        "SocketAddr" => "socket address (`host:port`)",
        "PathBuf" => "path",
        "Duration" => "duration",
        "SecretString" => "string, secret",
        "ShardId" => "shard id (`[a-z0-9][a-z0-9-]{0,62}`)",
        "Cidr" => "network (`10.0.0.0/8`, `fd00::/8`, or one address)",
        _ => return None,
    })
}

struct Walk<'a> {
    types: &'a BTreeMap<String, TypeDef>,
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Place {
    key: String,
    section: String,
    /// Under a list: no variable of its own.
    in_list: bool,
}

impl Place {
    fn child(&self, name: &str) -> Place {
        let key = if self.key.is_empty() { name.to_owned() } else { format!("{}.{name}", self.key) };
        let section = if self.key.is_empty() { String::new() } else { self.section.clone() };
        Place { key, section, in_list: self.in_list }
    }

    fn env(&self) -> Option<String> {
        (!self.in_list).then(|| {
            let name = self.key.replace('.', "__").to_uppercase();
            format!("SHARDGATE_{name}")
        })
    }
}

impl Walk<'_> {
    /// Whether a field of type `ty` is a table of keys (a struct, optional or not).
    fn is_table(&self, ty: &syn::Type) -> bool {
        let (name, args) = split_type(ty);
        let name = if name == "Option" { split_type(&args[0]).0 } else { name };
        matches!(self.types.get(&name), Some(TypeDef { kind: Kind::Struct { .. }, .. }))
    }

    /// The fields of struct `name` at `place`, with their defaults from `defaults` (the struct's
    /// serialised default, if there is one).
    fn walk_struct(&mut self, name: &str, place: &Place, defaults: Option<&Value>) {
        let types = self.types;
        let Some(TypeDef { kind: Kind::Struct { fields, .. }, .. }) = types.get(name) else {
            panic!("`{}` is a {name}, which no configuration source defines as a struct", place.key)
        };
        if let Some(Value::Object(written)) = defaults {
            let written: BTreeSet<&str> = written.keys().map(String::as_str).collect();
            let parsed: BTreeSet<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(written, parsed, "the fields of {name} as parsed differ from what serde writes");
        }
        for field in fields {
            let mut child = place.child(&field.name);
            if place.key.is_empty() && self.is_table(&field.ty) {
                child.section = field.name.clone();
            }
            let default = defaults.and_then(|d| d.get(&field.name));
            self.walk_field(field, &child, default);
        }
    }

    fn walk_field(&mut self, field: &Field, place: &Place, default: Option<&Value>) {
        let types = self.types;
        let (name, args) = split_type(&field.ty);
        let (optional, (name, args)) =
            if name == "Option" { (true, split_type(&args[0])) } else { (false, (name, args)) };
        // A field serde needs a value for; in a list's element, its default is no default.
        let required = !field.defaulted && !optional;
        let shown_default = |value: Option<&Value>| match value {
            Some(value) if !(value.is_null() || required && place.in_list) => {
                format!("`{}`", toml_value(value, &name))
            }
            _ if required => "required".to_owned(),
            _ if optional => "unset".to_owned(),
            _ => panic!("`{}` has no default to show", place.key),
        };
        let mut entry = Entry {
            key: place.key.clone(),
            section: place.section.clone(),
            kind: String::new(),
            default: String::new(),
            env: place.env(),
            env_value: None,
            doc: field.doc.clone(),
            together: required && !place.in_list,
        };
        if let Some((_, computed)) = COMPUTED_DEFAULTS.iter().find(|(key, _)| *key == place.key) {
            entry.default = format!("computed: {computed}");
        }
        let optional_note = if optional { ", optional" } else { "" };
        match (name.as_str(), types.get(&name)) {
            ("Vec", _) => {
                let (element, _) = split_type(&args[0]);
                if let Some(kind) = scalar_kind(&element) {
                    entry.kind = format!("list of {kind}{optional_note}");
                } else if let Some(TypeDef { kind: Kind::Enum { variants }, .. }) = types.get(&element) {
                    entry.kind = format!("list, each one of {}{optional_note}", one_of(variants));
                    entry.doc.push_str(&values_of(variants));
                } else {
                    entry.kind = format!("list of tables{optional_note}");
                }
                if entry.default.is_empty() {
                    entry.default = shown_default(default);
                }
                entry.env_value = default.filter(|v| !v.is_null()).map(|v| toml_value(v, "Vec"));
                self.entries.push(entry);
                if scalar_kind(&element).is_none()
                    && !matches!(types.get(&element), Some(TypeDef { kind: Kind::Enum { .. }, .. }))
                {
                    let inner =
                        Place { key: format!("{}[]", place.key), section: place.section.clone(), in_list: true };
                    let defaults_of_one = element_defaults(&place.key);
                    self.walk_struct(&element, &inner, defaults_of_one.as_ref());
                }
            }
            ("HashMap" | "BTreeMap", _) => {
                let (value_type, _) = split_type(&args[1]);
                let entry_name =
                    ENTRY_NAMES.iter().find(|(key, _)| *key == place.key).map(|(_, name)| *name).unwrap_or_else(|| {
                        panic!("`{}` is a table of named entries: name them in ENTRY_NAMES", place.key)
                    });
                entry.kind = format!("table of `<{entry_name}>` = value");
                entry.default = shown_default(default);
                self.entries.push(entry);
                let inner = place.child(&format!("<{entry_name}>"));
                if let Some(kind) = scalar_kind(&value_type) {
                    let doc = format!("One `{}` entry: a {kind}.", place.key);
                    self.entries.push(Entry {
                        key: inner.key.clone(),
                        section: inner.section.clone(),
                        kind: kind.to_owned(),
                        default: "none".to_owned(),
                        env: inner.env(),
                        env_value: None,
                        doc,
                        together: false,
                    });
                } else {
                    self.walk_struct(&value_type, &inner, None);
                }
            }
            (_, Some(TypeDef { kind: Kind::Struct { .. }, .. })) => {
                entry.kind = format!("table{optional_note}");
                entry.default = if optional && default.is_none_or(Value::is_null) {
                    "unset".to_owned()
                } else if required {
                    "required".to_owned()
                } else {
                    "see its keys".to_owned()
                };
                self.entries.push(entry);
                let nested = default.filter(|v| v.is_object());
                self.walk_struct(&name, place, nested);
            }
            (_, Some(TypeDef { kind: Kind::Enum { variants }, .. })) => {
                entry.kind = format!("one of {}{optional_note}", one_of(variants));
                entry.doc.push_str(&values_of(variants));
                if entry.default.is_empty() {
                    entry.default = shown_default(default);
                }
                entry.env_value = default.and_then(Value::as_str).map(str::to_owned);
                self.entries.push(entry);
            }
            (scalar, None) => {
                let kind = scalar_kind(scalar).unwrap_or_else(|| {
                    panic!("`{}` is a {scalar}: teach the reference how to show it (scalar_kind)", place.key)
                });
                entry.kind = format!("{kind}{optional_note}");
                if entry.default.is_empty() {
                    entry.default = shown_default(default);
                }
                if scalar == "SecretString" {
                    entry.default = match entry.default.as_str() {
                        "unset" | "required" => format!("{} (secret: never shown)", entry.default),
                        _ => "set (secret: never shown)".to_owned(),
                    };
                } else {
                    entry.env_value = default.filter(|v| !v.is_null()).map(|value| match value {
                        Value::String(text) if scalar == "Duration" => duration(text),
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                }
                self.entries.push(entry);
            }
        }
    }
}

/// The defaults of one element of a list of tables, where the type has them.
fn element_defaults(list: &str) -> Option<Value> {
    match list {
        "auth.issuers" => Some(serde_json::to_value(shardgate_gatekeeper::IssuerConfig::named("")).unwrap()),
        _ => None,
    }
}

/// The values of an enum, each with its doc, as a list to follow a description.
fn values_of(variants: &[(String, String)]) -> String {
    let mut list = String::from("\n");
    for (name, doc) in variants {
        let _ = write!(list, "\n- `{name}`: {doc}");
    }
    list
}

fn one_of(variants: &[(String, String)]) -> String {
    variants.iter().map(|(name, _)| format!("`{name}`")).collect::<Vec<_>>().join(", ")
}

/// `"30000ms"` (how durations serialise) as it is best written: `"30s"`.
fn duration(millis: &str) -> String {
    let ms: u64 =
        millis.strip_suffix("ms").and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("a duration: {millis}"));
    let units = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1_000, "s")];
    units
        .iter()
        .find(|(size, _)| ms >= *size && ms.is_multiple_of(*size))
        .map_or_else(|| format!("{ms}ms"), |(size, unit)| format!("{}{unit}", ms / size))
}

/// A default as TOML writes it.
fn toml_value(value: &Value, type_name: &str) -> String {
    match value {
        Value::String(text) if type_name == "Duration" => format!("\"{}\"", duration(text)),
        Value::String(text) => format!("{text:?}"),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(|item| toml_value(item, "")).collect::<Vec<_>>().join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter().map(|(k, v)| format!("{k} = {}", toml_value(v, ""))).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn serve_entries(types: &BTreeMap<String, TypeDef>) -> Vec<Entry> {
    let defaults = serde_json::to_value(Config::default()).expect("the defaults serialise");
    let mut walk = Walk { types, entries: Vec::new() };
    walk.walk_struct("Config", &Place { key: String::new(), section: String::new(), in_list: false }, Some(&defaults));
    walk.entries
}

fn gatekeeper_entries(types: &BTreeMap<String, TypeDef>) -> Vec<Entry> {
    let defaults = serde_json::to_value(GatekeeperConfig::default()).expect("the defaults serialise");
    let mut walk = Walk { types, entries: Vec::new() };
    walk.walk_struct(
        "GatekeeperConfig",
        &Place { key: String::new(), section: String::new(), in_list: false },
        Some(&defaults),
    );
    walk.entries
}

/// The structs the two walks reach.
fn reached_structs(types: &BTreeMap<String, TypeDef>) -> BTreeSet<String> {
    fn reach(types: &BTreeMap<String, TypeDef>, name: &str, into: &mut BTreeSet<String>) {
        if !into.insert(name.to_owned()) {
            return;
        }
        let Some(TypeDef { kind: Kind::Struct { fields, .. }, .. }) = types.get(name) else { return };
        for field in fields {
            let mut pending = vec![field.ty.clone()];
            while let Some(ty) = pending.pop() {
                let (name, args) = split_type(&ty);
                if matches!(types.get(&name), Some(TypeDef { kind: Kind::Struct { .. }, .. })) {
                    reach(types, &name, into);
                }
                pending.extend(args);
            }
        }
    }
    let mut reached = BTreeSet::new();
    reach(types, "Config", &mut reached);
    reach(types, "GatekeeperConfig", &mut reached);
    reached
}

// ---------------------------------------------------------------------------------------------
// The document.

fn generate() -> String {
    let types = parse_sources();
    let serve = serve_entries(&types);
    let gatekeeper = gatekeeper_entries(&types);
    let mut out = String::from(PREAMBLE);

    out.push_str("\n## `shardgate serve`\n\n");
    out.push_str("The gateway's configuration (`Config`). Its sections, in the order below: ");
    let sections: Vec<&str> = {
        let mut seen = Vec::new();
        for entry in &serve {
            if !entry.section.is_empty() && !seen.contains(&entry.section.as_str()) {
                seen.push(entry.section.as_str());
            }
        }
        seen
    };
    out.push_str(&sections.iter().map(|s| format!("`[{s}]`")).collect::<Vec<_>>().join(", "));
    out.push_str(".\n\n## Top-level keys\n\n");
    for entry in serve.iter().filter(|e| e.section.is_empty()) {
        write_entry(&mut out, entry);
    }
    let Some(TypeDef { kind: Kind::Struct { fields, .. }, .. }) = types.get("Config") else { unreachable!() };
    for section in &sections {
        let field = fields.iter().find(|f| f.name == *section).expect("a section is a field of Config");
        let (type_name, args) = split_type(&field.ty);
        let type_name = if type_name == "Option" { split_type(&args[0]).0 } else { type_name };
        let type_doc = types.get(&type_name).map(|t| t.doc.as_str()).unwrap_or_default();
        let _ = write!(out, "## `[{section}]`\n\n");
        if !type_doc.is_empty() {
            let _ = write!(out, "{type_doc}\n\n");
        }
        for entry in serve.iter().filter(|e| e.section == *section) {
            write_entry(&mut out, entry);
        }
    }

    out.push_str("## `shardgate gatekeeper`\n\n");
    let doc = types.get("GatekeeperConfig").map(|t| t.doc.as_str()).unwrap_or_default();
    let _ = write!(out, "`GatekeeperConfig`: {doc}\n\n");
    // A top-level key is shared when it and every key under it are `serve`'s, entry for entry.
    let top = |key: &str| key.split(['.', '[']).next().unwrap_or_default().to_owned();
    // (A section's own entry may say what it is for in the gatekeeper in other words.)
    let same = |e: &Entry| {
        serve.iter().any(|s| {
            s.key == e.key
                && s.kind == e.kind
                && s.default == e.default
                && s.env == e.env
                && (s.doc == e.doc || (!e.section.is_empty() && e.key == e.section))
        })
    };
    let mut shared: Vec<String> = Vec::new();
    let mut own: Vec<String> = Vec::new();
    for entry in &gatekeeper {
        let key = top(&entry.key);
        if shared.contains(&key) || own.contains(&key) {
            continue;
        }
        if gatekeeper.iter().filter(|e| top(&e.key) == key).all(same) {
            shared.push(key);
        } else {
            own.push(key);
        }
    }
    let _ = write!(
        out,
        "These keys, and every key under them, are `serve`'s, with the same types, defaults and \
         variables: {}.\n\nIts own keys:\n\n",
        shared.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
    );
    for entry in gatekeeper.iter().filter(|e| own.contains(&top(&e.key))) {
        write_entry(&mut out, entry);
    }
    out
}

fn write_entry(out: &mut String, entry: &Entry) {
    let env = match (&entry.env, entry.together) {
        (None, _) => "no variable (under a list)".to_owned(),
        (Some(name), false) => format!("`{name}`"),
        (Some(name), true) => format!("`{name}`, set with the other keys of its table"),
    };
    let default = match entry.default.as_str() {
        required if required.starts_with("required") => format!("no default: {required}"),
        "see its keys" => "defaults: see its keys".to_owned(),
        default => format!("default {default}"),
    };
    let _ = write!(out, "### `{}`\n\n{} · {default} · {env}\n\n", entry.key, entry.kind);
    if !entry.doc.is_empty() {
        let _ = write!(out, "{}\n\n", entry.doc);
    }
}
