use std::fmt;

use async_trait::async_trait;

use super::BreakerRecord;

/// A change made to one breaker under the store's lock: the record, and the store's clock
/// in milliseconds.
pub type BreakerChange<'a> = dyn FnMut(&mut BreakerRecord, i64) + Send + 'a;

/// Breaker records kept outside the process (a database), so that every process that shares
/// the store sees one breaker per tool: a tool that is down opens it for all of them.
#[async_trait]
pub trait BreakerStore: Send + Sync + fmt::Debug {
    /// Loads `tool`'s record (closed when there is none), applies `change` to it with the
    /// store's clock, and saves it, as one atomic step for every process that shares the store.
    async fn update(
        &self,
        tool: &str,
        change: &mut BreakerChange<'_>,
    ) -> Result<(), BreakerStoreError>;

    /// Every stored record, with its tool's name.
    async fn records(&self) -> Result<Vec<(String, BreakerRecord)>, BreakerStoreError>;
}

/// A [`BreakerStore`] could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("breaker store: {0}")]
pub struct BreakerStoreError(#[from] pub Box<dyn std::error::Error + Send + Sync>);
