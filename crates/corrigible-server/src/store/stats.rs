//! Counts over time: the corrections sent back, by category, in equal spans of a window.

use serde::Serialize;

/// The most spans a window is cut into.
pub const MAX_BUCKETS: u32 = 240;

/// A span of time, `since` (inclusive) to `until` (exclusive), in unix milliseconds, cut into
/// `buckets` equal spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub(super) since: i64,
    pub(super) until: i64,
    pub(super) buckets: u32,
}

/// Why a window was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// `since` is before the epoch.
    #[error("since must be a time in unix milliseconds, not negative")]
    Negative,
    /// `until` is not after `since`.
    #[error("until must be after since")]
    Empty,
    /// `buckets` is 0 or above [`MAX_BUCKETS`].
    #[error("buckets must be from 1 to {MAX_BUCKETS}")]
    Buckets,
}

impl Window {
    /// The window from `since` until `until` in `buckets` spans.
    pub fn new(since: i64, until: i64, buckets: u32) -> Result<Self, WindowError> {
        if since < 0 {
            return Err(WindowError::Negative);
        }
        if until <= since {
            return Err(WindowError::Empty);
        }
        if buckets == 0 || buckets > MAX_BUCKETS {
            return Err(WindowError::Buckets);
        }
        Ok(Self {
            since,
            until,
            buckets,
        })
    }

    /// The window's start, unix milliseconds.
    pub fn since(&self) -> i64 {
        self.since
    }

    /// The window's end (exclusive), unix milliseconds.
    pub fn until(&self) -> i64 {
        self.until
    }

    /// How many spans it is cut into.
    pub fn buckets(&self) -> u32 {
        self.buckets
    }

    /// The length of one span, rounded up so that `buckets` spans cover the window.
    pub fn bucket_ms(&self) -> i64 {
        let length = self.until.saturating_sub(self.since);
        let buckets = i64::from(self.buckets);
        length / buckets + i64::from(length % buckets != 0)
    }
}

/// How many corrections of one category were sent back in one span of a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorrectionCount {
    /// The span, from 0.
    pub bucket: u32,
    /// The correction category (`invalid_json`, `unknown_tool`, …).
    pub category: String,
    /// How many.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_window() {
        let window = Window::new(1_000, 1_010, 3).unwrap();
        assert_eq!(window.bucket_ms(), 4);
        assert!(window.bucket_ms() * i64::from(window.buckets()) >= 10);
        assert_eq!(Window::new(0, 3_600_000, 24).unwrap().bucket_ms(), 150_000);
        assert_eq!(Window::new(5, 5, 1), Err(WindowError::Empty));
        assert_eq!(Window::new(0, 10, 0), Err(WindowError::Buckets));
        assert_eq!(
            Window::new(0, 10, MAX_BUCKETS + 1),
            Err(WindowError::Buckets)
        );
        assert_eq!(Window::new(-1, 10, 1), Err(WindowError::Negative));
        assert_eq!(Window::new(0, i64::MAX, 1).unwrap().bucket_ms(), i64::MAX);
    }
}
