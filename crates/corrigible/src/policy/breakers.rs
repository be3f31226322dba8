use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

use super::{
    BreakerDecision, BreakerPolicy, BreakerRecord, BreakerState, BreakerStore, BreakerTransition,
};

/// Per-tool circuit breakers, shared by every run of a process (wrap in `Arc`), or by every
/// process of a [`BreakerStore`].
///
/// With a store, each gate and each result is one atomic update of the stored record; when
/// the store fails, the call is judged by this process's own breaker instead, and a warning
/// is logged.
#[derive(Debug)]
pub struct CircuitBreakers {
    policy: BreakerPolicy,
    epoch: Instant,
    tools: Mutex<HashMap<String, BreakerRecord>>,
    store: Option<Arc<dyn BreakerStore>>,
}

impl Default for CircuitBreakers {
    fn default() -> Self {
        Self::new(BreakerPolicy::default())
    }
}

impl CircuitBreakers {
    /// Breakers of this process that follow `policy`.
    pub fn new(policy: BreakerPolicy) -> Self {
        Self {
            policy,
            epoch: Instant::now(),
            tools: Mutex::new(HashMap::new()),
            store: None,
        }
    }

    /// Breakers that follow `policy`, kept in `store` and shared with every process using it.
    pub fn shared(policy: BreakerPolicy, store: Arc<dyn BreakerStore>) -> Self {
        Self {
            store: Some(store),
            ..Self::new(policy)
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> BreakerPolicy {
        self.policy
    }

    /// Whether the state lives in a [`BreakerStore`].
    pub fn is_shared(&self) -> bool {
        self.store.is_some()
    }

    /// Decides whether a call of `tool` may go through now; an open breaker whose reset time
    /// has passed becomes half-open and lets this one call through as its probe.
    pub async fn acquire(&self, tool: &str) -> (BreakerDecision, Option<BreakerTransition>) {
        self.acquire_under(tool, self.policy).await
    }

    /// [`acquire`](Self::acquire) with `policy`'s threshold and reset time instead of the
    /// breakers' own: a run whose policy overrides them shares the state, not the settings.
    pub async fn acquire_under(
        &self,
        tool: &str,
        policy: BreakerPolicy,
    ) -> (BreakerDecision, Option<BreakerTransition>) {
        let mut gate = None;
        self.update(tool, &mut |record, now| {
            gate = Some(record.acquire(tool, now, policy));
        })
        .await;
        gate.unwrap_or((BreakerDecision::Allow, None))
    }

    /// Records the result of a call that went through: the breaker's state after it, and
    /// the transition it caused.
    pub async fn record(
        &self,
        tool: &str,
        success: bool,
    ) -> (BreakerState, Option<BreakerTransition>) {
        self.record_under(tool, success, self.policy).await
    }

    /// [`record`](Self::record) with `policy`'s threshold instead of the breakers' own.
    pub async fn record_under(
        &self,
        tool: &str,
        success: bool,
        policy: BreakerPolicy,
    ) -> (BreakerState, Option<BreakerTransition>) {
        let mut result = None;
        self.update(tool, &mut |record, now| {
            let transition = record.record(tool, success, now, policy);
            result = Some((record.state, transition));
        })
        .await;
        result.unwrap_or((BreakerState::Closed, None))
    }

    /// The current state of `tool`'s breaker.
    pub async fn state(&self, tool: &str) -> BreakerState {
        self.states()
            .await
            .into_iter()
            .find(|(name, _)| name == tool)
            .map_or(BreakerState::Closed, |(_, state)| state)
    }

    /// Every known breaker and its state, sorted by tool name.
    pub async fn states(&self) -> Vec<(String, BreakerState)> {
        let mut all: Vec<(String, BreakerState)> = match self.stored_records().await {
            Some(records) => records
                .into_iter()
                .map(|(tool, record)| (tool, record.state))
                .collect(),
            None => self
                .lock()
                .iter()
                .map(|(tool, record)| (tool.clone(), record.state))
                .collect(),
        };
        all.sort();
        all
    }

    async fn stored_records(&self) -> Option<Vec<(String, BreakerRecord)>> {
        let store = self.store.as_ref()?;
        match store.records().await {
            Ok(records) => Some(records),
            Err(error) => {
                tracing::warn!(%error, "reading the shared breakers; showing this process's own");
                None
            }
        }
    }

    /// Applies `change` to `tool`'s record in the store, or in this process when there is
    /// no store or it fails.
    async fn update(&self, tool: &str, change: &mut (dyn FnMut(&mut BreakerRecord, i64) + Send)) {
        if let Some(store) = &self.store {
            match store.update(tool, change).await {
                Ok(()) => return,
                Err(error) => {
                    tracing::warn!(%error, tool, "updating a shared breaker; using this process's own");
                }
            }
        }
        let now = i64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(i64::MAX);
        let mut tools = self.lock();
        change(tools.entry(tool.to_string()).or_default(), now);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, BreakerRecord>> {
        self.tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_probes_and_closes() {
        let b = CircuitBreakers::new(BreakerPolicy::new(2, Duration::from_secs(60)).unwrap());
        assert_eq!(b.acquire("w").await.0, BreakerDecision::Allow);
        assert!(b.record("w", false).await.1.is_none());
        let (state, t) = b.record("w", false).await;
        let t = t.unwrap();
        assert_eq!(state, BreakerState::Open);
        assert_eq!((t.from, t.to), (BreakerState::Closed, BreakerState::Open));
        assert!(matches!(
            b.acquire("w").await.0,
            BreakerDecision::Reject { .. }
        ));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(b.acquire("w").await.0, BreakerDecision::Probe);
        assert!(
            matches!(b.acquire("w").await.0, BreakerDecision::Reject { .. }),
            "only one probe"
        );
        let t = b.record("w", true).await.1.unwrap();
        assert_eq!(
            (t.from, t.to),
            (BreakerState::HalfOpen, BreakerState::Closed)
        );
        assert_eq!(
            b.states().await,
            vec![("w".to_string(), BreakerState::Closed)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failed_probe_reopens() {
        let b = CircuitBreakers::new(BreakerPolicy::new(1, Duration::from_secs(5)).unwrap());
        b.record("w", false).await;
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(b.acquire("w").await.0, BreakerDecision::Probe);
        let t = b.record("w", false).await.1.unwrap();
        assert_eq!(t.to, BreakerState::Open);
    }

    #[tokio::test]
    async fn a_disabled_breaker_never_opens() {
        let b = CircuitBreakers::new(BreakerPolicy::new(0, Duration::ZERO).unwrap());
        for _ in 0..10 {
            assert_eq!(b.record("w", false).await, (BreakerState::Closed, None));
        }
        assert_eq!(b.acquire("w").await.0, BreakerDecision::Allow);
    }
}
