use serde::{Deserialize, Serialize};

use crate::correction::rejection::Category;

use crate::evidence::grounding::Grounding;

/// The evidence rules that judge a decision beyond its contract (valid JSON, a registered tool,
/// input that fits its schema, no call that already failed). Each is on or off on its own; a
/// [`Profile`] names a set.
///
/// The precise set holds only rules that sent back no correct trajectory of the bench's
/// correct corpus (`corrigible bench --suite correct`); the strict set adds the heuristics
/// that catch more of a small model's mistakes at the price of some correct replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Checks {
    /// `ungrounded_final`: a satisfied answer after tool calls that all failed.
    pub ungrounded_final: bool,
    /// `echo`: a satisfied answer that repeats the harness's own words (its instructions, its
    /// correction feedback or budget messages, a worked example) instead of answering.
    pub echo: bool,
    /// `claimed_action`: a satisfied answer that says an action was carried out ("I have sent
    /// the email", "the lights have been turned off") while no tool able to act succeeded, or
    /// that promises a call of one of the run's tools.
    pub claimed_action: bool,
    /// `declined_request`: a satisfied answer that opens by declining the request ("I'm sorry,
    /// but I cannot assist with that.").
    pub declined_request: bool,
    /// `wrong_arithmetic`: a satisfied answer resting on a calculation that does not hold,
    /// stated in the answer or in the reasoning before it (`20 + 80 + 160 = 460`).
    pub wrong_arithmetic: bool,
    /// `ungrounded_argument`: a copied string or an expression's number found in neither the
    /// request nor a tool result.
    pub ungrounded_argument: bool,
    /// `unstated_result`: a satisfied answer that states none of the facts the tools returned.
    pub unstated_result: bool,
    /// `uncovered_request`: a satisfied answer while a value the request names was never
    /// looked up.
    pub uncovered_request: bool,
    /// `repeated_action` for idempotent tools: an identical call of a tool that already
    /// succeeded with it. A tool that is not idempotent never runs the same call twice,
    /// whatever this says.
    pub repeated_action: bool,
}

impl Checks {
    /// The rules that reject no correct trajectory of the corpus: the default.
    pub const PRECISE: Checks = Checks {
        ungrounded_final: true,
        echo: true,
        claimed_action: true,
        declined_request: true,
        wrong_arithmetic: true,
        ungrounded_argument: false,
        unstated_result: false,
        uncovered_request: false,
        repeated_action: false,
    };

    /// Every rule: catches more of a small model's mistakes, and sends back some correct
    /// replies (see the bench's per-rule table).
    pub const STRICT: Checks = Checks {
        ungrounded_final: true,
        echo: true,
        claimed_action: true,
        declined_request: true,
        wrong_arithmetic: true,
        ungrounded_argument: true,
        unstated_result: true,
        uncovered_request: true,
        repeated_action: true,
    };

    /// No evidence rule: only the contract is checked.
    pub const NONE: Checks = Checks {
        ungrounded_final: false,
        echo: false,
        claimed_action: false,
        declined_request: false,
        wrong_arithmetic: false,
        ungrounded_argument: false,
        unstated_result: false,
        uncovered_request: false,
        repeated_action: false,
    };

    /// Each rule (named by its rejection category) and whether it is on, in contract order.
    pub fn rules(&self) -> [(Category, bool); 9] {
        [
            (Category::UngroundedFinal, self.ungrounded_final),
            (Category::Echo, self.echo),
            (Category::ClaimedAction, self.claimed_action),
            (Category::DeclinedRequest, self.declined_request),
            (Category::WrongArithmetic, self.wrong_arithmetic),
            (Category::UngroundedArgument, self.ungrounded_argument),
            (Category::UnstatedResult, self.unstated_result),
            (Category::UncoveredRequest, self.uncovered_request),
            (Category::RepeatedAction, self.repeated_action),
        ]
    }

    /// Whether the rule of `category` is on; `false` for a category that is no rule.
    pub fn is_on(&self, category: Category) -> bool {
        self.rules()
            .iter()
            .any(|(rule, on)| *rule == category && *on)
    }

    /// These checks with the answer rules set as the older `grounding` setting says: `values`
    /// turns `unstated_result` and `uncovered_request` on, `failures` turns them off.
    pub fn with_grounding(mut self, grounding: Grounding) -> Checks {
        let on = grounding == Grounding::Values;
        self.unstated_result = on;
        self.uncovered_request = on;
        self
    }

    /// These checks with only the rule of `category` on; `None` for a category that is no rule.
    pub fn only(category: Category) -> Option<Checks> {
        let mut checks = Checks::NONE;
        let slot = match category {
            Category::UngroundedFinal => &mut checks.ungrounded_final,
            Category::Echo => &mut checks.echo,
            Category::ClaimedAction => &mut checks.claimed_action,
            Category::DeclinedRequest => &mut checks.declined_request,
            Category::WrongArithmetic => &mut checks.wrong_arithmetic,
            Category::UngroundedArgument => &mut checks.ungrounded_argument,
            Category::UnstatedResult => &mut checks.unstated_result,
            Category::UncoveredRequest => &mut checks.uncovered_request,
            Category::RepeatedAction => &mut checks.repeated_action,
            _ => return None,
        };
        *slot = true;
        Some(checks)
    }
}

impl Default for Checks {
    fn default() -> Self {
        Profile::default().checks()
    }
}

/// A named set of [`Checks`]: `precise` (the default) or `strict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Only rules with no false rejection on the correct corpus.
    #[default]
    Precise,
    /// Every rule, heuristics included.
    Strict,
}

impl Profile {
    /// The checks this profile turns on.
    pub fn checks(self) -> Checks {
        match self {
            Profile::Precise => Checks::PRECISE,
            Profile::Strict => Checks::STRICT,
        }
    }

    /// Its name in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Precise => "precise",
            Profile::Strict => "strict",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "precise" => Ok(Profile::Precise),
            "strict" => Ok(Profile::Strict),
            other => Err(format!(
                "unknown profile `{other}`: use `precise` or `strict`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_turns_on_one_named_rule() {
        for (category, _) in Checks::STRICT.rules() {
            let only = Checks::only(category).unwrap();
            let on: Vec<Category> = only.rules().iter().filter(|r| r.1).map(|r| r.0).collect();
            assert_eq!(on, vec![category]);
            assert!(only.is_on(category));
        }
        assert_eq!(Checks::only(Category::InvalidJson), None);
    }

    #[test]
    fn profiles_parse_and_default_to_precise() {
        assert_eq!("strict".parse::<Profile>(), Ok(Profile::Strict));
        assert!("lenient".parse::<Profile>().is_err());
        assert_eq!(Checks::default(), Checks::PRECISE);
    }
}
