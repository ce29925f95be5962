//! JSON answers end with a newline, so that a shell prompt after `curl` starts on a line of its
//! own. Problems get theirs where they are written (`error.rs`); the records' answers, the
//! busiest, are written with theirs ([`json_line`], [`json_line_response`]); the other
//! successful JSON answers of the gateway's routes get it here, as their body's last byte
//! (streamed bodies too).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use serde::Serialize;

/// `value` as a JSON answer's body, newline included.
pub fn json_line(value: &impl Serialize) -> Bytes {
    let mut body = serde_json::to_vec(value).unwrap_or_default();
    body.push(b'\n');
    Bytes::from(body)
}

/// An `application/json` answer of `body` with its length, which [`end_json_with_newline`]
/// leaves as it is: `body` ends with its newline already ([`json_line`]), or (a record cached
/// before answers had one) goes out without it.
pub fn json_line_response(status: StatusCode, body: Bytes) -> Response {
    let length = HeaderValue::from(body.len());
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CONTENT_LENGTH, length);
    response
}

/// Appends `\n` to an `application/json` answer whose length is not fixed by a header.
pub fn end_json_with_newline(response: Response) -> Response {
    let headers = response.headers();
    let json = headers.get(header::CONTENT_TYPE).is_some_and(|value| value.as_bytes() == b"application/json");
    if !json || headers.contains_key(header::CONTENT_LENGTH) {
        return response;
    }
    response.map(|body| Body::new(WithNewline { inner: body, done: false }))
}

pin_project_lite::pin_project! {
    /// A body, then one `\n`.
    struct WithNewline {
        #[pin]
        inner: Body,
        done: bool,
    }
}

impl http_body::Body for WithNewline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.inner.poll_frame(cx) {
            Poll::Ready(None) => {
                *this.done = true;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"\n")))))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + 1);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + 1);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use http_body::Body as _;

    /// The whole body of `response`.
    async fn collect(response: Response) -> Bytes {
        axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()
    }

    #[tokio::test]
    async fn json_answers_end_with_a_newline_and_others_are_left_alone() {
        let json = end_json_with_newline(axum::Json(serde_json::json!({"a": 1})).into_response());
        assert_eq!(json.body().size_hint().exact(), Some(8), "hyper's Content-Length counts the newline");
        assert_eq!(collect(json).await, "{\"a\":1}\n");
        let text = end_json_with_newline("plain".into_response());
        assert_eq!(collect(text).await, "plain");
    }
}
