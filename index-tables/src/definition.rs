//! Index definitions: which fields an index reads, whether a value may belong to one record
//! only, and how much of the record each entry carries (the pattern's three layouts).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::IndexError;
use crate::names::{FieldPath, IndexName};
use crate::value_key::{MAX_KEY_PARTS, ValueKey};

/// The most fields a covering index may copy into its entries.
pub const MAX_INCLUDED_FIELDS: usize = 16;

/// What an entry holds besides the record's key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Layout {
    /// Only the reference: a look-up reads each record from its shard (two look-ups, the
    /// cheapest index to keep).
    #[default]
    Normalized,
    /// The reference and a copy of the `include` fields, so frequent queries are answered from
    /// the index alone; other fields come from the record.
    Covering {
        /// The copied fields (1 to [`MAX_INCLUDED_FIELDS`], no repeats).
        include: Vec<FieldPath>,
    },
    /// The reference and a copy of the whole record (fastest reads, most storage and the most
    /// work on every write).
    Full,
}

/// A validated index definition. Built by [`IndexDef::new`] or deserialized (which validates
/// the same way), so a definition that exists is valid.
///
/// JSON form: `{"name": "by_town_name", "fields": ["/town", "/last_name"], "unique": false,
/// "layout": {"kind": "covering", "include": ["/email"]}}` (`unique` defaults to false, `layout`
/// to `{"kind": "normalized"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "IndexDefSpec")]
pub struct IndexDef {
    name: IndexName,
    fields: Vec<FieldPath>,
    unique: bool,
    layout: Layout,
}

/// The unvalidated JSON form of an [`IndexDef`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexDefSpec {
    name: IndexName,
    fields: Vec<FieldPath>,
    #[serde(default)]
    unique: bool,
    #[serde(default)]
    layout: Layout,
}

impl TryFrom<IndexDefSpec> for IndexDef {
    type Error = IndexError;

    fn try_from(spec: IndexDefSpec) -> Result<Self, IndexError> {
        IndexDef::new(spec.name, spec.fields, spec.unique, spec.layout)
    }
}

impl IndexDef {
    /// Validates a definition: 1 to 4 fields (a composite index orders by the first, then the
    /// second, ...), no field twice, and for a covering layout 1 to 16 distinct included fields.
    pub fn new(name: IndexName, fields: Vec<FieldPath>, unique: bool, layout: Layout) -> Result<Self, IndexError> {
        if !(1..=MAX_KEY_PARTS).contains(&fields.len()) {
            return Err(IndexError::FieldCount);
        }
        if has_repeats(&fields) {
            return Err(IndexError::DuplicateField);
        }
        if let Layout::Covering { include } = &layout {
            if !(1..=MAX_INCLUDED_FIELDS).contains(&include.len()) {
                return Err(IndexError::InvalidLayout("a covering index includes 1 to 16 fields"));
            }
            if has_repeats(include) {
                return Err(IndexError::InvalidLayout("a covering index includes each field once"));
            }
        }
        Ok(Self { name, fields, unique, layout })
    }

    /// The index name.
    pub fn name(&self) -> &IndexName {
        &self.name
    }

    /// The indexed fields, in key order.
    pub fn fields(&self) -> &[FieldPath] {
        &self.fields
    }

    /// Whether a value may belong to one record only.
    pub fn is_unique(&self) -> bool {
        self.unique
    }

    /// What entries hold besides the reference.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The key `record` has in this index: `Ok(None)` if it is not indexed (a field missing,
    /// or `null`, an object or an array, see [`crate::value_key`]);
    /// [`IndexError::ValueTooLong`] if its value is too long to index (the write is refused).
    pub fn value_key(&self, record: &RawValue) -> Result<Option<ValueKey>, IndexError> {
        let mut parts = Vec::with_capacity(self.fields.len());
        for field in &self.fields {
            match field.extract(record) {
                Some(value) => parts.push(value),
                None => return Ok(None),
            }
        }
        ValueKey::encode(&parts)
    }

    /// The key of a looked-up value given as URL text ([`ValueKey::from_query`]), which must
    /// have as many parts as the index has fields ([`IndexError::ValueArity`] otherwise).
    pub fn query_key(&self, raw: &str) -> Result<ValueKey, IndexError> {
        let key = ValueKey::from_query(raw)?;
        let found = key.parts();
        if found != self.fields.len() {
            return Err(IndexError::ValueArity { expected: self.fields.len(), found });
        }
        Ok(key)
    }

    /// The copy an entry of `record` carries, as JSON text: none for a normalized index; for a
    /// covering one, an object from each included field's pointer to its value (in the order of
    /// `include`, absent fields left out), `{"/email": "a@b.c"}`; for a full one, the whole
    /// record. Values are copied as their exact text, never re-serialised.
    pub fn copy(&self, record: &RawValue) -> Option<String> {
        match &self.layout {
            Layout::Normalized => None,
            Layout::Covering { include } => {
                let mut copied = String::from("{");
                for (field, value) in include.iter().filter_map(|field| Some((field, field.extract(record)?))) {
                    if copied.len() > 1 {
                        copied.push(',');
                    }
                    // A pointer is a string: serialising it cannot fail.
                    copied.push_str(&serde_json::to_string(field.as_str()).unwrap_or_default());
                    copied.push(':');
                    copied.push_str(value.get());
                }
                copied.push('}');
                Some(copied)
            }
            Layout::Full => Some(record.get().to_owned()),
        }
    }

    /// What a write that turns record value `old` into `new` (`None`: no record, or deleted)
    /// must do in this index. Errors only if the new value is too long to index.
    pub fn change(&self, old: Option<&RawValue>, new: Option<&RawValue>) -> Result<EntryChange, IndexError> {
        // An old value too long to index never had an entry.
        let old_key = old.and_then(|v| self.value_key(v).ok().flatten());
        let new_key = new.map(|v| self.value_key(v)).transpose()?.flatten();
        if old_key == new_key {
            // Same value: only a copy may need refreshing.
            let copy_changed = self.layout != Layout::Normalized
                && new_key.is_some()
                && old.map(|v| self.copy(v)) != new.map(|v| self.copy(v));
            return Ok(EntryChange { write: new_key.filter(|_| copy_changed), remove: None });
        }
        Ok(EntryChange { write: new_key, remove: old_key })
    }
}

impl IndexDef {
    /// Whether a write turning `old` into `new` adds an entry to this index (the record had
    /// none in it, and will have one): what the write adds to its tenant's index entries. Errors
    /// only if the new value is too long to index.
    pub fn adds_entry(&self, old: Option<&RawValue>, new: &RawValue) -> Result<bool, IndexError> {
        let had = old.and_then(|v| self.value_key(v).ok().flatten()).is_some();
        Ok(!had && self.value_key(new)?.is_some())
    }
}

fn has_repeats(fields: &[FieldPath]) -> bool {
    fields.iter().enumerate().any(|(i, f)| fields[..i].contains(f))
}

/// The entries one record write touches in one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryChange {
    /// The value whose entry is written (pending before the record's write, live after): a new
    /// value, or the same value when its copy changed.
    pub write: Option<ValueKey>,
    /// The old value whose entry goes once the record's write committed.
    pub remove: Option<ValueKey>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn raw(value: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    fn path(p: &str) -> FieldPath {
        FieldPath::parse(p).unwrap()
    }

    fn def(fields: &[&str], layout: Layout) -> Result<IndexDef, IndexError> {
        IndexDef::new(IndexName::parse("by_x").unwrap(), fields.iter().map(|f| path(f)).collect(), false, layout)
    }

    #[test]
    fn definitions_are_validated() {
        assert!(def(&["/a"], Layout::Normalized).is_ok());
        assert!(def(&["/a", "/b", "/c", "/d"], Layout::Full).is_ok());
        assert!(matches!(def(&[], Layout::Normalized), Err(IndexError::FieldCount)));
        assert!(matches!(def(&["/a", "/b", "/c", "/d", "/e"], Layout::Normalized), Err(IndexError::FieldCount)));
        assert!(matches!(def(&["/a", "/a"], Layout::Normalized), Err(IndexError::DuplicateField)));
        assert!(matches!(def(&["/a"], Layout::Covering { include: vec![] }), Err(IndexError::InvalidLayout(_))));
        let twice = Layout::Covering { include: vec![path("/b"), path("/b")] };
        assert!(matches!(def(&["/a"], twice), Err(IndexError::InvalidLayout(_))));
    }

    #[test]
    fn definitions_round_trip_through_json() {
        let raw = r#"{"name":"by_town_name","fields":["/town","/last_name"],"unique":true,"layout":{"kind":"covering","include":["/email"]}}"#;
        let parsed: IndexDef = serde_json::from_str(raw).unwrap();
        assert_eq!(parsed.fields().len(), 2);
        assert!(parsed.is_unique());
        assert_eq!(serde_json::to_string(&parsed).unwrap(), raw);
        let minimal: IndexDef = serde_json::from_str(r#"{"name":"by_a","fields":["/a"]}"#).unwrap();
        assert_eq!((minimal.is_unique(), minimal.layout()), (false, &Layout::Normalized));
        for bad in [
            r#"{"name":"by_a","fields":[]}"#,
            r#"{"name":"by_a","fields":["/a","/a"]}"#,
            r#"{"name":"by_a","fields":["a"]}"#,
            r#"{"name":"by_a","fields":["/a"],"extra":1}"#,
            r#"{"name":"by_a","fields":["/a"],"layout":{"kind":"covering","include":[]}}"#,
            r#"{"name":"by_a","fields":["/a"],"layout":{"kind":"sideways"}}"#,
        ] {
            assert!(serde_json::from_str::<IndexDef>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn records_without_a_scalar_at_every_field_are_not_indexed() {
        let index = def(&["/town", "/name/last"], Layout::Normalized).unwrap();
        let key = index.value_key(&raw(json!({"town": "Redmond", "name": {"last": "Smith"}}))).unwrap().unwrap();
        assert_eq!(key.decode(), [json!("Redmond"), json!("Smith")]);
        for unindexed in [
            json!({"town": "Redmond"}),
            json!({"town": null, "name": {"last": "Smith"}}),
            json!({"town": ["Redmond"], "name": {"last": "Smith"}}),
            json!({"town": {"n": 1}, "name": {"last": "Smith"}}),
            json!("just a string"),
        ] {
            assert!(matches!(index.value_key(&raw(unindexed.clone())), Ok(None)), "{unindexed}");
        }
        let long = raw(json!({"town": "x".repeat(2000), "name": {"last": "Smith"}}));
        assert!(matches!(index.value_key(&long), Err(IndexError::ValueTooLong { .. })));
    }

    #[test]
    fn numbers_are_read_from_the_record_text_exactly() {
        let index = def(&["/u"], Layout::Normalized).unwrap();
        let key = |text: &str| index.value_key(&RawValue::from_string(text.to_owned()).unwrap()).unwrap().unwrap();
        assert_ne!(key(r#"{"u": 9007199254740993}"#), key(r#"{"u": 9007199254740992}"#));
        assert_ne!(key(r#"{"u": 36893488147419103233}"#), key(r#"{"u": 36893488147419103232}"#));
        assert_ne!(key(r#"{"u": 0.30000000000000000001}"#), key(r#"{"u": 0.3}"#));
        assert_eq!(key(r#"{"u": 1.50}"#), key(r#"{"u": 15e-1}"#));
    }

    #[test]
    fn query_keys_need_one_part_per_field() {
        let index = def(&["/town", "/zip"], Layout::Normalized).unwrap();
        assert!(index.query_key(r#"["Redmond", 98052]"#).is_ok());
        assert!(matches!(index.query_key("Redmond"), Err(IndexError::ValueArity { expected: 2, found: 1 })));
    }

    #[test]
    fn copies_follow_the_layout() {
        let record = RawValue::from_string(
            r#"{"email": "a@b.c", "name": "Ann", "town": "Oslo", "id": 36893488147419103233}"#.to_owned(),
        )
        .unwrap();
        assert_eq!(def(&["/email"], Layout::Normalized).unwrap().copy(&record), None);
        let covering = Layout::Covering { include: vec![path("/name"), path("/missing"), path("/id")] };
        assert_eq!(
            def(&["/email"], covering).unwrap().copy(&record).as_deref(),
            Some(r#"{"/name":"Ann","/id":36893488147419103233}"#),
            "values copied exactly"
        );
        let full = def(&["/email"], Layout::Full).unwrap().copy(&record).unwrap();
        assert_eq!(full, record.get());
    }

    #[test]
    fn changes_write_new_values_and_remove_old_ones() {
        let index = def(&["/town"], Layout::Normalized).unwrap();
        let key = |t: &str| index.value_key(&raw(json!({"town": t}))).unwrap();
        let (oslo, rome) = (raw(json!({"town": "Oslo"})), raw(json!({"town": "Rome"})));
        let change = |old: Option<&RawValue>, new: Option<&RawValue>| index.change(old, new).unwrap();
        assert_eq!(change(None, Some(&oslo)), EntryChange { write: key("Oslo"), remove: None });
        assert_eq!(change(Some(&oslo), Some(&rome)), EntryChange { write: key("Rome"), remove: key("Oslo") });
        assert_eq!(change(Some(&oslo), None), EntryChange { write: None, remove: key("Oslo") });
        assert_eq!(
            change(Some(&oslo), Some(&raw(json!({"town": "Oslo", "x": 1})))),
            EntryChange { write: None, remove: None }
        );
        assert_eq!(change(Some(&oslo), Some(&raw(json!({})))), EntryChange { write: None, remove: key("Oslo") });

        // A covering index rewrites the same value's entry when its copy changes.
        let covering = def(&["/town"], Layout::Covering { include: vec![path("/name")] }).unwrap();
        let (a, b) = (raw(json!({"town": "Oslo", "name": "A"})), raw(json!({"town": "Oslo", "name": "B"})));
        assert_eq!(covering.change(Some(&a), Some(&b)).unwrap(), EntryChange { write: key("Oslo"), remove: None });
        let same_copy = raw(json!({"town": "Oslo", "name": "A", "x": 1}));
        assert_eq!(covering.change(Some(&a), Some(&same_copy)).unwrap(), EntryChange { write: None, remove: None });
    }
}
