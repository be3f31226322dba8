//! The default policy sends back no correct trajectory of the corpus, and the corpus itself
//! replays as written.

use corrigible::{Checks, Policy};
use corrigible_bench::correct::{RuleSet, run_corpus_with, trajectory};

#[tokio::test]
async fn the_default_policy_sends_back_no_correct_trajectory() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [
        RuleSet {
            name: "default".into(),
            checks: Policy::default().checks,
        },
        RuleSet {
            name: "strict".into(),
            checks: Checks::STRICT,
        },
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
    let sets = [RuleSet {
        name: "contract".into(),
        checks: Checks::NONE,
    }];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    assert!(
        report.broken.is_empty(),
        "{}",
        corrigible_bench::correct::table(&report)
    );
}

#[tokio::test]
async fn claimed_action_catches_claims_and_sends_back_no_correct_work() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [RuleSet {
        name: "claimed_action".into(),
        checks: Checks::only("claimed_action").unwrap(),
    }];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    let row = report.row("claimed_action").unwrap();
    let table = corrigible_bench::correct::table(&report);
    assert_eq!(row.false_rejections_total, 0, "{table}");
    let claims: Vec<&str> = row
        .catches
        .iter()
        .filter(|c| c.id.starts_with("claim_"))
        .map(|c| c.id.as_str())
        .collect();
    let written = corpus.iter().filter(|t| t.id.starts_with("claim_")).count();
    println!("claimed_action caught {} of {written} claims", claims.len());
    // One claim of the set names no action at all ("Your flowers are on their way!").
    assert_eq!(claims.len(), written - 1, "{claims:?}\n{table}");
    assert!(!claims.contains(&"claim_22"));
}

#[tokio::test]
async fn echo_catches_copied_examples_and_sends_back_no_correct_work() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [RuleSet {
        name: "echo".into(),
        checks: Checks::only("echo").unwrap(),
    }];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    let row = report.row("echo").unwrap();
    let table = corrigible_bench::correct::table(&report);
    assert_eq!(row.false_rejections_total, 0, "{table}");
    let echoes = corpus.iter().filter(|t| t.id.starts_with("echo_")).count();
    let caught = row
        .catches
        .iter()
        .filter(|c| c.id.starts_with("echo_"))
        .count();
    println!(
        "echo caught {caught} of {echoes} copied examples, {} mistakes in all",
        row.caught
    );
    assert_eq!(caught, echoes, "{table}");
}

#[tokio::test]
async fn declined_request_catches_declines_sent_as_satisfied_and_sends_back_no_correct_work() {
    let corpus = trajectory::builtin().unwrap();
    let sets = [RuleSet {
        name: "declined_request".into(),
        checks: Checks::only("declined_request").unwrap(),
    }];
    let report = run_corpus_with(&corpus, &sets).await.unwrap();
    let row = report.row("declined_request").unwrap();
    let table = corrigible_bench::correct::table(&report);
    assert_eq!(row.false_rejections_total, 0, "{table}");
    let declines = corpus
        .iter()
        .filter(|t| t.id.starts_with("decline_"))
        .count();
    let caught = row
        .catches
        .iter()
        .filter(|c| c.id.starts_with("decline_"))
        .count();
    println!(
        "declined_request caught {caught} of {declines} declines sent as satisfied, {} mistakes in all",
        row.caught
    );
    assert_eq!(caught, declines, "{table}");
}
