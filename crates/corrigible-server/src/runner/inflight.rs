//! The runs in flight, so a shutdown can wait for them and then interrupt the rest.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;

#[derive(Default)]
struct Inner {
    closed: bool,
    runs: HashMap<String, Option<AbortHandle>>,
}

/// Runs in flight, and whether new ones are still accepted.
#[derive(Default)]
pub(crate) struct InFlight {
    inner: Mutex<Inner>,
    idle: Notify,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a starting run; `false` once the registry is closed.
    pub(crate) fn enter(&self, run_id: &str) -> bool {
        let mut inner = self.lock();
        if inner.closed {
            return false;
        }
        inner.runs.insert(run_id.to_string(), None);
        true
    }

    /// Attaches the run's task; a registry that already interrupted its runs aborts it now.
    pub(crate) fn attach(&self, run_id: &str, handle: AbortHandle) {
        let mut inner = self.lock();
        let closed = inner.closed;
        match inner.runs.get_mut(run_id) {
            Some(slot) => *slot = Some(handle),
            None if closed => handle.abort(),
            None => {}
        }
    }

    /// A run ended.
    pub(crate) fn leave(&self, run_id: &str) {
        let mut inner = self.lock();
        inner.runs.remove(run_id);
        if inner.runs.is_empty() {
            self.idle.notify_waiters();
        }
    }

    /// Runs in flight now.
    pub(crate) fn len(&self) -> usize {
        self.lock().runs.len()
    }

    /// Whether new runs are refused.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Refuses new runs from now on.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
    }

    /// Waits until no run is in flight, up to `deadline`; `true` when none is left.
    pub(crate) async fn wait_idle(&self, deadline: Duration) -> bool {
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.lock().runs.is_empty() {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(deadline, wait).await.is_ok()
    }

    /// Aborts every run still in flight and returns their ids.
    pub(crate) fn abort_all(&self) -> Vec<String> {
        let mut inner = self.lock();
        inner.closed = true;
        inner
            .runs
            .drain()
            .map(|(id, handle)| {
                if let Some(handle) = handle {
                    handle.abort();
                }
                id
            })
            .collect()
    }
}
