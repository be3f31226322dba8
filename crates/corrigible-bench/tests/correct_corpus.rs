//! The default policy sends back no correct trajectory of the corpus, and the corpus itself
//! replays as written.

use corrigible::{Category, Checks, Policy};
use corrigible_bench::correct::{RuleSet, run_corpus_with, trajectory};

#[tokio::test]
async fn the_default_policy_sends_back_no_correct_trajectory() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [
        RuleSet::new("default", Policy::default().checks),
        RuleSet::new("strict", Checks::STRICT),
    ];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    assert!(report.correct_total >= 300, "{}", report.correct_total);
    let default = report.row("default").unwrap();
    assert_eq!(
        default.false_rejections_total,
        0,
        "{}",
        corrigible_bench::correct::table(&report)
    );
    // The corpus can fail: the strict profile's heuristics send some of it back.
    let strict = report.row("strict").unwrap();
    assert!(strict.false_rejections_total > 0);
    assert!(strict.caught >= default.caught);
}

#[tokio::test]
async fn every_correct_trajectory_replays_as_written() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [RuleSet::new("contract", Checks::NONE)];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    assert!(
        report.broken.is_empty(),
        "{}",
        corrigible_bench::correct::table(&report)
    );
}

/// What one rule alone does on the corpus, with its dev set: the trajectories whose id starts
/// with the set's prefix.
struct DevSet {
    /// Ids of the dev set that the rule sent back.
    caught: Vec<String>,
    /// Size of the dev set.
    written: usize,
    /// Mistakes of the whole corpus the rule sent back.
    caught_in_all: usize,
    /// The report's table, for failure messages.
    table: String,
}

/// Runs `rule` alone over the built-in corpus, asserting that it sends back no correct work.
async fn rule_alone(rule: &str, prefix: &str) -> DevSet {
    let corpus = trajectory::builtin().unwrap();
    let category = Category::ALL
        .into_iter()
        .find(|c| c.as_str() == rule)
        .unwrap();
    let sets = [RuleSet::new(rule, Checks::only(category).unwrap())];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    let row = report.row(rule).unwrap();
    let table = corrigible_bench::correct::table(&report);
    assert_eq!(row.false_rejections_total, 0, "{table}");
    DevSet {
        caught: row
            .catches
            .iter()
            .filter(|c| c.id.starts_with(prefix))
            .map(|c| c.id.clone())
            .collect(),
        written: corpus.iter().filter(|t| t.id.starts_with(prefix)).count(),
        caught_in_all: row.caught,
        table,
    }
}

#[tokio::test]
async fn claimed_action_catches_claims_and_sends_back_no_correct_work() {
    let claims = rule_alone("claimed_action", "claim_").await;
    println!(
        "claimed_action caught {} of {} claims",
        claims.caught.len(),
        claims.written
    );
    // One claim of the set names no action at all ("Your flowers are on their way!").
    assert_eq!(
        claims.caught.len(),
        claims.written - 1,
        "{:?}\n{}",
        claims.caught,
        claims.table
    );
    assert!(!claims.caught.iter().any(|id| id == "claim_22"));
}

#[tokio::test]
async fn echo_catches_copied_examples_and_sends_back_no_correct_work() {
    let echoes = rule_alone("echo", "echo_").await;
    println!(
        "echo caught {} of {} copied examples, {} mistakes in all",
        echoes.caught.len(),
        echoes.written,
        echoes.caught_in_all
    );
    assert_eq!(echoes.caught.len(), echoes.written, "{}", echoes.table);
}

#[tokio::test]
async fn declined_request_catches_declines_sent_as_satisfied_and_sends_back_no_correct_work() {
    let declines = rule_alone("declined_request", "decline_").await;
    println!(
        "declined_request caught {} of {} declines sent as satisfied, {} mistakes in all",
        declines.caught.len(),
        declines.written,
        declines.caught_in_all
    );
    assert_eq!(
        declines.caught.len(),
        declines.written,
        "{}",
        declines.table
    );
}

/// A rule of one's own: a satisfied answer that apologises is sent back.
struct NoApology;

impl corrigible::Rule for NoApology {
    fn name(&self) -> &str {
        "no_apology"
    }

    fn check_final(
        &self,
        answer: &corrigible::Final,
        _evidence: &corrigible::rule::Evidence<'_>,
    ) -> Option<String> {
        (answer.satisfied && answer.summary.to_lowercase().contains("sorry"))
            .then(|| "the answer apologises yet says satisfied true".to_string())
    }
}

#[tokio::test]
async fn a_rule_of_ones_own_is_measured_on_both_sides_of_the_corpus() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [
        RuleSet::rule(std::sync::Arc::new(NoApology)),
        RuleSet::new(
            "declined_request",
            Checks::only(Category::DeclinedRequest).unwrap(),
        ),
    ];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    let table = corrigible_bench::correct::table(&report);
    let own = report.row("no_apology").unwrap();
    let builtin = report.row("declined_request").unwrap();
    assert!(own.caught > 0, "{table}");
    assert!(
        own.catches.iter().all(|c| matches!(
            &c.verdict,
            corrigible_bench::correct::Verdict::SentBack { category, .. } if category == "no_apology"
        )),
        "{table}"
    );
    assert!(table.contains("no_apology"), "{table}");
    // Apologies are how this corpus's declines open: the rule catches what the built-in
    // rule catches there.
    assert!(own.caught >= builtin.caught.min(1), "{table}");
    eprintln!("{table}");
}
