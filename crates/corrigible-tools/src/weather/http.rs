//! One JSON GET with its failures classified: unreachable, timeout, status, malformed.

use std::time::Duration;

use serde::de::DeserializeOwned;

use super::error::{Service, WeatherError};
use super::wire::ApiError;

/// Longest service explanation quoted back in an error.
const MAX_REASON: usize = 200;

/// Sends `GET url?query` and parses the JSON body as `T`.
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    timeout: Duration,
    service: Service,
    url: &str,
    query: &[(&str, String)],
) -> Result<T, WeatherError> {
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            WeatherError::Timeout {
                service,
                after: timeout,
            }
        } else {
            WeatherError::Unreachable {
                service,
                reason: error_chain(&e),
            }
        }
    };
    let response = client
        .get(url)
        .query(query)
        .send()
        .await
        .map_err(transport)?;
    let status = response.status();
    let body = response.bytes().await.map_err(transport)?;
    if !status.is_success() {
        return Err(WeatherError::Status {
            service,
            status: status.as_u16(),
            reason: serde_json::from_slice::<ApiError>(&body)
                .ok()
                .map(|e| truncate(&e.reason)),
        });
    }
    serde_json::from_slice(&body).map_err(|e| WeatherError::Malformed {
        service,
        reason: e.to_string(),
    })
}

/// The error and its sources, e.g. `error sending request: … : Connection refused`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(e) = source {
        let text = e.to_string();
        if parts.last().is_none_or(|last| !last.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
