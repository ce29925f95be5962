//! Conditional requests (RFC 9110 §13): the `If-Match` / `If-None-Match` preconditions of
//! record and blob writes, and entity-tag lists.

use axum::http::header;

use crate::error::{ApiError, Code};

/// The precondition a write states: `If-Match` (`*` or a list of entity tags) or
/// `If-None-Match: *` (create only); both at once, or another `If-None-Match`, is 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// No precondition.
    Always,
    /// `If-Match: *`: the item must exist.
    Exists,
    /// `If-None-Match: *`: the item must not exist.
    Absent,
    /// `If-Match` with these tags (quotes and any `W/` removed).
    Match(Vec<String>),
}

/// The tags of an `If-Match` / `If-None-Match` list (quotes and any `W/` removed); `None` if
/// one is not quoted.
pub fn entity_tags(list: &str) -> Option<Vec<String>> {
    list.split(',')
        .map(|tag| {
            let tag = tag.trim();
            let tag = tag.strip_prefix("W/").unwrap_or(tag);
            tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')).map(str::to_owned)
        })
        .collect()
}

/// Reads the write precondition of a request.
pub fn precondition(headers: &axum::http::HeaderMap) -> Result<Precondition, ApiError> {
    let text = |name: header::HeaderName| -> Result<Option<String>, ApiError> {
        let values: Vec<&str> = headers
            .get_all(&name)
            .iter()
            .map(|v| v.to_str().map_err(|_| ApiError::new(Code::InvalidHeader, format!("{name} is not valid text"))))
            .collect::<Result<_, _>>()?;
        Ok((!values.is_empty()).then(|| values.join(",")))
    };
    match (text(header::IF_MATCH)?, text(header::IF_NONE_MATCH)?) {
        (Some(_), Some(_)) => Err(ApiError::new(Code::InvalidHeader, "send If-Match or If-None-Match, not both")),
        (Some(m), None) if m.trim() == "*" => Ok(Precondition::Exists),
        (Some(m), None) => entity_tags(&m).map(Precondition::Match).ok_or_else(|| {
            ApiError::new(Code::InvalidHeader, "If-Match must be \"*\" or a list of quoted entity tags")
        }),
        (None, Some(n)) if n.trim() == "*" => Ok(Precondition::Absent),
        (None, Some(_)) => Err(ApiError::new(Code::InvalidHeader, "writes accept only If-None-Match: *")),
        (None, None) => Ok(Precondition::Always),
    }
}
