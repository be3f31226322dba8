//! The lease of an instance on a shared store: a heartbeat three times per lease, and a sweep
//! that marks `interrupted` the runs of instances whose lease expired (crashed instances).
//! A live owner's runs are never taken: its heartbeat keeps its lease.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::store::{RunStore, StoreError};

/// This instance's default id: `hostname:port`, stable across restarts, so a restarted
/// instance recovers its own crashed runs at once.
pub(crate) fn default_instance_id(addr: SocketAddr) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", addr.port())
}

/// Takes the lease, interrupts the runs a previous process with this id left running and
/// those of expired instances.
pub(crate) async fn start(
    store: &dyn RunStore,
    instance: &str,
    lease: Duration,
) -> Result<u64, StoreError> {
    store.heartbeat(instance).await?;
    let own = store.interrupt_owned(instance).await?;
    let orphans = store.interrupt_orphans(instance, millis(lease)).await?;
    Ok(own + orphans)
}

/// Heartbeats and sweeps until aborted.
pub(crate) fn spawn(store: Arc<dyn RunStore>, instance: String, lease: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval((lease / 3).max(Duration::from_millis(10)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(error) = store.heartbeat(&instance).await {
                tracing::error!(%error, "could not renew this instance's lease");
                continue;
            }
            match store.interrupt_orphans(&instance, millis(lease)).await {
                Ok(0) => {}
                Ok(runs) => tracing::warn!(runs, "runs of an expired instance marked interrupted"),
                Err(error) => tracing::error!(%error, "could not sweep expired instances' runs"),
            }
        }
    })
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
