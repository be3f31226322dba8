//! Reading a request body under the size and time limits.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, header};
use futures_util::StreamExt;

use crate::errors::{ApiError, BadRequest, PayloadTooLarge, RequestTimeout, UnsupportedMediaType};

/// `Ok` when the request says its body is `application/json` (parameters such as
/// `charset` allowed): a form or `text/plain` POST from another site is refused.
pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), UnsupportedMediaType> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let essence = value.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(UnsupportedMediaType(value))
    }
}

/// The whole body, 413 as soon as it is known to exceed `limit` bytes (from its
/// `Content-Length`, or while reading), or 408 when it has not all arrived within `timeout`
/// (a stalled or trickling client).
pub(crate) async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    tokio::time::timeout(timeout, read(headers, body, limit))
        .await
        .map_err(|_| RequestTimeout { limit: timeout })?
}

async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(PayloadTooLarge { limit }.into());
    }
    let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| BadRequest::new("body", format!("could not read the body: {e}")))?;
        if bytes.len() + chunk.len() > limit {
            return Err(PayloadTooLarge { limit }.into());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
