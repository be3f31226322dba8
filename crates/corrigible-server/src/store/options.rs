//! How the run store connects: whether clear text may cross the network, and how many
//! connections an instance keeps.

/// Postgres connections each instance keeps open at most, by default.
pub const DEFAULT_POOL_SIZE: u32 = 16;

/// How [`open_store_with`](super::open_store_with) connects to a Postgres database; a SQLite
/// store ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Connect to a Postgres host that is not loopback without TLS (`sslmode=disable`,
    /// `allow`, or `prefer` falling back) instead of refusing to.
    pub allow_plaintext: bool,
    /// Postgres connections this instance keeps open at most (at least 1).
    pub pool_size: u32,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            allow_plaintext: false,
            pool_size: DEFAULT_POOL_SIZE,
        }
    }
}
