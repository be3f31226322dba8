//! The connections a server holds open, at most `max` at once. A connection past the bound
//! takes the place of the one that has waited longest for a request, so held or half-open
//! connections cannot keep other clients out; when every connection has a request or a
//! response in progress, the new one is refused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// What a connection shows the registry: its traffic, its requests and responses in
/// progress, and the signal that closes it to make room.
pub(crate) struct Connection {
    start: Instant,
    last_ms: AtomicU64,
    requests: AtomicUsize,
    responses: AtomicUsize,
    evicted: Notify,
}

impl Connection {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            requests: AtomicUsize::new(0),
            responses: AtomicUsize::new(0),
            evicted: Notify::new(),
        }
    }

    /// A byte was read or written.
    pub(crate) fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// How long since the last byte.
    pub(crate) fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }

    /// Requests whose response head is not ready yet.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::Acquire)
    }

    /// Counts a request until its response head is ready.
    pub(crate) fn request(self: &Arc<Self>) -> InProgress {
        InProgress::enter(self.clone(), |c| &c.requests)
    }

    /// Counts a response until its body has been sent or dropped.
    pub(crate) fn response(self: &Arc<Self>) -> InProgress {
        InProgress::enter(self.clone(), |c| &c.responses)
    }

    /// Completes when the registry closes this connection to make room for another.
    pub(crate) async fn evicted(&self) {
        self.evicted.notified().await;
    }

    fn waiting_for_a_request(&self) -> bool {
        self.requests.load(Ordering::Acquire) == 0 && self.responses.load(Ordering::Acquire) == 0
    }
}

/// One request or response in progress on a connection, counted until dropped.
pub(crate) struct InProgress {
    connection: Arc<Connection>,
    counter: fn(&Connection) -> &AtomicUsize,
}

impl InProgress {
    fn enter(connection: Arc<Connection>, counter: fn(&Connection) -> &AtomicUsize) -> Self {
        counter(&connection).fetch_add(1, Ordering::AcqRel);
        Self {
            connection,
            counter,
        }
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        (self.counter)(&self.connection).fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, Arc<Connection>>,
}

/// The registry of open connections.
pub(crate) struct OpenConnections {
    max: usize,
    inner: Mutex<Inner>,
    empty: Notify,
}

/// How a new connection was let in, or why not.
pub(crate) enum Admitted {
    /// Under the bound.
    Free(Member),
    /// In place of the connection that had waited longest for a request, now closing.
    Replacing(Member),
    /// Every connection has a request or a response in progress.
    Full,
}

impl OpenConnections {
    /// A registry of at most `max` connections (at least 1).
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            inner: Mutex::new(Inner::default()),
            empty: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets a new connection in, closing the longest-waiting idle one if the bound is reached.
    pub(crate) fn admit(self: &Arc<Self>) -> Admitted {
        let mut inner = self.lock();
        let replacing = if inner.open.len() >= self.max {
            let victim = inner
                .open
                .iter()
                .filter(|(_, c)| c.waiting_for_a_request())
                .max_by_key(|(_, c)| c.idle_for())
                .map(|(id, _)| *id);
            let Some(victim) = victim.and_then(|id| inner.open.remove(&id)) else {
                return Admitted::Full;
            };
            victim.evicted.notify_one();
            true
        } else {
            false
        };
        let id = inner.next_id;
        inner.next_id += 1;
        let connection = Arc::new(Connection::new());
        inner.open.insert(id, connection.clone());
        let member = Member {
            registry: self.clone(),
            id,
            connection,
        };
        if replacing {
            Admitted::Replacing(member)
        } else {
            Admitted::Free(member)
        }
    }

    /// Connections open now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Waits until no connection is open, up to `limit`; `true` when none is left.
    pub(crate) async fn wait_empty(&self, limit: Duration) -> bool {
        let wait = async {
            loop {
                let empty = self.empty.notified();
                if self.lock().open.is_empty() {
                    return;
                }
                empty.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

/// An open connection's place in the registry, given up when dropped.
pub(crate) struct Member {
    registry: Arc<OpenConnections>,
    id: u64,
    /// The connection's state.
    pub(crate) connection: Arc<Connection>,
}

impl Drop for Member {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        inner.open.remove(&self.id);
        if inner.open.is_empty() {
            self.registry.empty.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(admitted: Admitted) -> Member {
        match admitted {
            Admitted::Free(m) | Admitted::Replacing(m) => m,
            Admitted::Full => panic!("refused"),
        }
    }

    #[tokio::test]
    async fn the_longest_waiting_idle_connection_makes_room() {
        let open = OpenConnections::new(2);
        let oldest = member(open.admit());
        tokio::time::sleep(Duration::from_millis(20)).await;
        let newer = member(open.admit());
        newer.connection.touch();
        let evicted = {
            let c = oldest.connection.clone();
            tokio::spawn(async move { c.evicted().await })
        };
        let third = open.admit();
        assert!(matches!(third, Admitted::Replacing(_)));
        tokio::time::timeout(Duration::from_secs(1), evicted)
            .await
            .expect("the oldest idle connection is told to close")
            .unwrap();
        assert_eq!(open.len(), 2);
        drop(oldest);
        assert_eq!(open.len(), 2, "an evicted connection no longer counts");
    }

    #[tokio::test]
    async fn busy_connections_are_kept_and_the_new_one_refused() {
        let open = OpenConnections::new(2);
        let a = member(open.admit());
        let b = member(open.admit());
        let _request = a.connection.request();
        let _streaming = b.connection.response();
        assert!(matches!(open.admit(), Admitted::Full));
        drop(_request);
        assert!(matches!(open.admit(), Admitted::Replacing(_)));
    }

    #[tokio::test]
    async fn waits_until_every_connection_is_gone() {
        let open = OpenConnections::new(4);
        let a = member(open.admit());
        assert!(!open.wait_empty(Duration::from_millis(20)).await);
        let waiting = tokio::spawn({
            let open = open.clone();
            async move { open.wait_empty(Duration::from_secs(5)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        assert!(waiting.await.unwrap());
    }
}
