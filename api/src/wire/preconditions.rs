//! Conditional requests (RFC 9110 §13): the `If-Match` / `If-None-Match` preconditions of
//! record and blob writes, and entity-tag lists.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};

use crate::wire::error::{ApiError, Code};

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

/// Whether `If-None-Match` values name the current representation: `*` names any, else a tag
/// (quotes and any `W/` removed) for which `is_current` holds. A list with an unquoted tag names
/// nothing. Allocates nothing (it runs on every cached read).
pub fn none_match_hits<'a>(
    values: impl IntoIterator<Item = &'a HeaderValue>,
    is_current: impl Fn(&str) -> bool,
) -> bool {
    values.into_iter().filter_map(|v| v.to_str().ok()).any(|list| {
        if list.trim() == "*" {
            return true;
        }
        let mut hit = false;
        for tag in list.split(',') {
            let tag = tag.trim();
            let tag = tag.strip_prefix("W/").unwrap_or(tag);
            let Some(tag) = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else { return false };
            hit |= is_current(tag);
        }
        hit
    })
}

/// The `If-None-Match` headers of a request, taken alone (the `HeaderMap` extractor would copy
/// every header of the request).
#[derive(Debug, Default)]
pub struct IfNoneMatch(Vec<HeaderValue>);

impl IfNoneMatch {
    /// Whether the request names the current representation ([`none_match_hits`]).
    pub fn hits(&self, is_current: impl Fn(&str) -> bool) -> bool {
        none_match_hits(&self.0, is_current)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IfNoneMatch {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.headers.get_all(header::IF_NONE_MATCH).iter().cloned().collect()))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn values(lists: &[&str]) -> Vec<HeaderValue> {
        lists.iter().map(|l| HeaderValue::from_str(l).unwrap()).collect()
    }

    #[test]
    fn if_none_match_names_the_current_tag_in_any_list_and_header() {
        let is_seven = |tag: &str| tag == "7";
        assert!(none_match_hits(&values(&["\"7\""]), is_seven));
        assert!(none_match_hits(&values(&["\"3\", W/\"7\""]), is_seven), "a weak tag later in the list");
        assert!(none_match_hits(&values(&["\"3\"", "\"7\""]), is_seven), "the tag in a second header");
        assert!(none_match_hits(&values(&[" * "]), is_seven), "* names any representation");
        assert!(!none_match_hits(&values(&["\"3\", \"8\""]), is_seven));
        assert!(!none_match_hits(&values(&["7"]), is_seven), "an unquoted tag names nothing");
        assert!(!none_match_hits(&values(&["\"7\", 8"]), is_seven), "a list with an unquoted tag names nothing");
        assert!(!none_match_hits(&values(&[]), is_seven));
    }
}
