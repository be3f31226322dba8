//! The policies compared by the bench.

use std::fmt;
use std::str::FromStr;

use corrigible::{Checks, Policy};
use serde::{Deserialize, Serialize};

/// A policy column of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// No corrections, no repair: the first reply is final ([`Policy::one_shot`]).
    OneShot,
    /// Local repair only, no corrections ([`Policy::repair_only`]).
    Repair,
    /// Repair and bounded corrections ([`Policy::default`]: the `precise` profile).
    SelfCorrect,
    /// As `self-correct`, under the `strict` profile: every evidence rule on.
    Strict,
    /// As `self-correct`, with every satisfied answer verified (the bench's verifier: the
    /// run's own model unless `--verifier` names another).
    Verify,
    /// No agent: the bare model, asked to think step by step and end with `Answer: N`, with
    /// no tools, in one call (see [`crate::bare`]).
    Bare,
}

impl PolicyKind {
    /// Every policy, in column order.
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::OneShot,
        PolicyKind::Repair,
        PolicyKind::SelfCorrect,
        PolicyKind::Strict,
    ];

    /// Every policy that can be named, the agent's and `bare`.
    pub const NAMED: [PolicyKind; 6] = [
        PolicyKind::Bare,
        PolicyKind::OneShot,
        PolicyKind::Repair,
        PolicyKind::SelfCorrect,
        PolicyKind::Strict,
        PolicyKind::Verify,
    ];

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::OneShot => "one-shot",
            PolicyKind::Repair => "repair",
            PolicyKind::SelfCorrect => "self-correct",
            PolicyKind::Strict => "strict",
            PolicyKind::Verify => "verify",
            PolicyKind::Bare => "bare",
        }
    }

    /// Whether runs under this policy go through the agent (all but `bare`).
    pub fn is_agent(self) -> bool {
        self != PolicyKind::Bare
    }

    /// Whether runs under this policy have their satisfied answers verified.
    pub fn verifies(self) -> bool {
        self == PolicyKind::Verify
    }

    /// The engine policy, with the task's bound on executed actions.
    pub fn policy(self, max_actions: u32) -> Policy {
        let mut policy = match self {
            PolicyKind::OneShot | PolicyKind::Bare => Policy::one_shot(),
            PolicyKind::Repair => Policy::repair_only(),
            PolicyKind::SelfCorrect | PolicyKind::Verify => Policy::default(),
            PolicyKind::Strict => Policy {
                checks: Checks::STRICT,
                ..Policy::default()
            },
        };
        policy.limits.max_actions = max_actions.max(1);
        policy
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::NAMED
            .into_iter()
            .find(|p| p.as_str() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown policy `{s}`: expected bare, one-shot, repair, self-correct, strict or verify"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_sets_bounds() {
        assert_eq!("repair".parse::<PolicyKind>(), Ok(PolicyKind::Repair));
        assert!("retry".parse::<PolicyKind>().is_err());
        assert_eq!("bare".parse::<PolicyKind>(), Ok(PolicyKind::Bare));
        assert!(!PolicyKind::Bare.is_agent());
        let one = PolicyKind::OneShot.policy(2);
        assert_eq!(one.limits.max_corrections, 0);
        assert!(!one.repair);
        assert!(PolicyKind::Repair.policy(2).repair);
        assert_eq!(PolicyKind::SelfCorrect.policy(0).limits.max_actions, 1);
    }
}
