use std::collections::BTreeMap;

use super::{Backoff, BreakerPolicy, Checks, Limits};

/// Retries of tool executions that ended `Failed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 1; 0 disables).
    pub max_retries: u32,
    /// Delays between attempts.
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 1,
            backoff: Backoff::default(),
        }
    }
}

/// Overrides for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolPolicy {
    /// Execution retries after `Failed`, instead of the default.
    pub max_retries: Option<u32>,
    /// `Retry` rejections allowed for this tool, instead of the default; 0 makes them terminal.
    pub max_rejections: Option<u32>,
    /// Declares the tool idempotent or not, overriding what the tool says of itself.
    pub idempotent: Option<bool>,
    /// Declares whether an identical call may run again after a success in one run (a polling
    /// tool), overriding what the tool says of itself.
    pub repeatable: Option<bool>,
}

/// Which tools get automatic execution retries at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RetryScope {
    /// Every tool.
    #[default]
    All,
    /// Only these tools.
    Include(Vec<String>),
    /// Every tool but these.
    Exclude(Vec<String>),
}

impl RetryScope {
    fn covers(&self, tool: &str) -> bool {
        match self {
            RetryScope::All => true,
            RetryScope::Include(names) => names.iter().any(|n| n == tool),
            RetryScope::Exclude(names) => !names.iter().any(|n| n == tool),
        }
    }
}

/// Every bound of a run, in one value.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Per-run and per-slot bounds.
    pub limits: Limits,
    /// Execution retries after `Failed`.
    pub retry: RetryPolicy,
    /// `Retry` rejections allowed per tool name (default 2).
    pub max_rejections: u32,
    /// Circuit breaker settings.
    pub breaker: BreakerPolicy,
    /// Per-tool overrides.
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Which tools get automatic execution retries.
    pub retry_scope: RetryScope,
    /// Whether safe local repairs are applied before rejecting malformed JSON.
    pub repair: bool,
    /// The evidence rules that judge decisions beyond the contract.
    pub checks: Checks,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            retry: RetryPolicy::default(),
            max_rejections: 2,
            breaker: BreakerPolicy::default(),
            tools: BTreeMap::new(),
            retry_scope: RetryScope::All,
            repair: true,
            checks: Checks::default(),
        }
    }
}

impl Policy {
    /// The "one-shot" policy: no corrections, no repair, no retries; the first reply is final.
    pub fn one_shot() -> Self {
        let mut policy = Self::default();
        policy.limits.max_corrections = 0;
        policy.limits.output_retries = 0;
        policy.max_rejections = 0;
        policy.retry.max_retries = 0;
        policy.repair = false;
        policy
    }

    /// The "repair" policy: local repair only, no corrections.
    pub fn repair_only() -> Self {
        Self {
            repair: true,
            ..Self::one_shot()
        }
    }

    /// Execution retries for `tool` after a `Failed`: zero when it is not idempotent or out of
    /// the retry scope.
    pub fn retries_for(&self, tool: &str, tool_says_idempotent: bool) -> u32 {
        let overrides = self.tools.get(tool).copied().unwrap_or_default();
        let idempotent = overrides.idempotent.unwrap_or(tool_says_idempotent);
        if !idempotent || !self.retry_scope.covers(tool) {
            return 0;
        }
        overrides.max_retries.unwrap_or(self.retry.max_retries)
    }

    /// `Retry` rejections allowed for `tool` in one run.
    pub fn rejections_for(&self, tool: &str) -> u32 {
        self.tools
            .get(tool)
            .and_then(|t| t.max_rejections)
            .unwrap_or(self.max_rejections)
    }

    /// Whether an identical call of `tool` may run again after it succeeded, after overrides.
    pub fn repeatable(&self, tool: &str, tool_says_repeatable: bool) -> bool {
        self.tools
            .get(tool)
            .and_then(|t| t.repeatable)
            .unwrap_or(tool_says_repeatable)
    }

    /// Whether `tool` is idempotent, after overrides.
    pub fn idempotent(&self, tool: &str, tool_says_idempotent: bool) -> bool {
        self.tools
            .get(tool)
            .and_then(|t| t.idempotent)
            .unwrap_or(tool_says_idempotent)
    }
}
