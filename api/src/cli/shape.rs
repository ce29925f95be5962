//! What each command expects the gateway to answer: the fields it reads, and their kinds. An
//! answer that is JSON but not of that shape (`{}` from a proxy, another service's JSON at the
//! URL) is a failure (exit 4), never printed as if it were the thing asked for ("created tenant
//! -"). Only what the CLI reads is required: the API may add fields.

use serde_json::Value;

/// The shape of an answer.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// What it is, for the message: `a tenant`, `a page of jobs`.
    pub name: &'static str,
    /// The fields it must have, with their kinds.
    pub fields: &'static [(&'static str, Kind)],
    /// For a page: the shape of each of its `items`.
    pub items: Option<&'static Shape>,
}

/// The kind of a field.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A string.
    Text,
    /// A number.
    Number,
    /// An object, whatever it holds.
    Object,
    /// An array.
    List,
    /// An object of this shape.
    Of(&'static Shape),
    /// `null`, or this kind.
    OrNull(&'static Kind),
}

impl Shape {
    /// An object with these fields.
    pub const fn object(name: &'static str, fields: &'static [(&'static str, Kind)]) -> Self {
        Self { name, fields, items: None }
    }

    /// A page (or list) whose `items` are each of `item`'s shape.
    pub const fn page(name: &'static str, item: &'static Shape) -> Self {
        Self { name, fields: &[("items", Kind::List)], items: Some(item) }
    }

    /// Why `value` is not of this shape, if it is not.
    pub fn mismatch(&self, value: &Value) -> Option<String> {
        if !value.is_object() {
            return Some(format!("{} is a JSON object, not {}", self.name, kind_of(value)));
        }
        for (field, kind) in self.fields {
            let found = value.get(*field).unwrap_or(&Value::Null);
            if let Some(why) = kind.mismatch(found) {
                return Some(format!("{} has `{field}`: {why}", self.name));
            }
        }
        let item = self.items?;
        let items = value.get("items").and_then(Value::as_array)?;
        items
            .iter()
            .enumerate()
            .find_map(|(n, v)| item.mismatch(v).map(|why| format!("item {n} of {}: {why}", self.name)))
    }
}

impl Kind {
    fn mismatch(self, value: &Value) -> Option<String> {
        let (fits, wanted) = match self {
            Self::Text => (value.is_string(), "a string"),
            Self::Number => (value.is_number(), "a number"),
            Self::Object => (value.is_object(), "an object"),
            Self::List => (value.is_array(), "an array"),
            Self::Of(shape) => return shape.mismatch(value),
            Self::OrNull(kind) => return if value.is_null() { None } else { kind.mismatch(value) },
        };
        (!fits).then(|| format!("{wanted}, not {}", kind_of(value)))
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "absent or null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A job (`GET /v1/admin/jobs/{id}`, and what starts one).
pub const JOB: Shape =
    Shape::object("a job", &[("id", Kind::Text), ("kind", Kind::Text), ("target", Kind::Text), ("state", Kind::Text)]);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PAGE: Shape = Shape::page("a page of jobs", &JOB);

    #[test]
    fn an_answer_is_checked_for_what_the_command_reads() {
        let job = json!({"id": "j", "kind": "tenant.move", "target": "t", "state": "running", "more": 1});
        assert_eq!(JOB.mismatch(&job), None);
        assert_eq!(JOB.mismatch(&json!({})).unwrap(), "a job has `id`: a string, not absent or null");
        assert_eq!(JOB.mismatch(&json!([])).unwrap(), "a job is a JSON object, not an array");
        assert_eq!(PAGE.mismatch(&json!({"items": [job]})), None);
        assert_eq!(
            PAGE.mismatch(&json!({"items": {}})).unwrap(),
            "a page of jobs has `items`: an array, not an object"
        );
        assert!(PAGE.mismatch(&json!({"items": [{"id": 3}]})).unwrap().starts_with("item 0 of a page of jobs: a job"));
        let maybe = Shape::object("an answer", &[("job", Kind::OrNull(&Kind::Of(&JOB)))]);
        assert_eq!(maybe.mismatch(&json!({"job": null})), None);
        assert!(maybe.mismatch(&json!({"job": {"id": 1}})).is_some());
    }
}
