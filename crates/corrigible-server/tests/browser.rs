//! The dashboard in headless Chromium, driven through WebDriver (chromedriver): start a run
//! with two corrections from the form, read its timeline, and filter the run list.
//!
//! Needs Debian's `chromium` and `chromium-driver`; skipped (with a message) only when
//! `/usr/bin/chromedriver` is absent. Set `CORRIGIBLE_SCREENSHOTS=DIR` to keep screenshots.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{Options, TWO_CORRECTIONS, TestServer};
use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn wait_for_driver(port: u16) {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/status"))
            .send()
            .await;
        if let Ok(response) = ready
            && response.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("chromedriver did not start on port {port}");
}

async fn screenshot(client: &fantoccini::Client, name: &str) {
    if let Ok(dir) = std::env::var("CORRIGIBLE_SCREENSHOTS") {
        let png = client.screenshot().await.expect("screenshot");
        std::fs::write(Path::new(&dir).join(name), png).expect("screenshot written");
    }
}

#[tokio::test]
async fn the_timeline_shows_two_corrections_and_their_total() {
    if !Path::new(CHROMEDRIVER).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMEDRIVER} is absent: CI must run the browser test (see .ci/run)"
        );
        eprintln!(
            "SKIPPED: {CHROMEDRIVER} is absent; install Debian's `chromium` and `chromium-driver` \
             to run the browser test"
        );
        return;
    }
    let server = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    let port = free_port();
    let mut driver = tokio::process::Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver starts");
    wait_for_driver(port).await;

    let profile = tempfile::tempdir().expect("profile dir");
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1440,1000",
                format!("--user-data-dir={}", profile.path().display()),
            ]
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session");

    let result = async {
        client.goto(&server.url("/")).await?;
        let wait = Duration::from_secs(15);
        client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#tool-choices input[value=calculator]"))
            .await?;
        let prompt = client.find(Locator::Id("prompt")).await?;
        prompt.send_keys("What is 2*(3+4)?").await?;
        client
            .find(Locator::Id("run-submit"))
            .await?
            .click()
            .await?;

        client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#timeline li.run_finished"))
            .await?;
        let url = client.current_url().await?;
        assert!(
            url.fragment().unwrap_or("").starts_with("/runs/"),
            "the form opens the run page: {url}"
        );
        let mut categories = Vec::new();
        for badge in client
            .find_all(Locator::Css("#timeline li.rejection .category"))
            .await?
        {
            categories.push(badge.text().await?);
        }
        assert_eq!(categories, ["invalid_json", "unknown_tool"]);
        let corrected = client
            .find_all(Locator::Css("#timeline li.rejection [data-corrected=true]"))
            .await?;
        assert_eq!(corrected.len(), 2, "both corrections are marked corrected");
        let total = client
            .find(Locator::Id("total-corrections"))
            .await?
            .text()
            .await?;
        assert_eq!(total, "2");
        let stages = client
            .find_all(Locator::Css("#timeline li.model_call .tl-stage"))
            .await?;
        assert_eq!(stages.len(), 4);
        assert_eq!(stages[1].text().await?, "step_1_correction_1");
        let tool = client
            .find(Locator::Css("#timeline li.tool_call"))
            .await?
            .text()
            .await?;
        assert!(tool.contains("calculator") && tool.contains("ok"), "{tool}");
        let thought = client
            .find(Locator::Css(
                "#timeline li.model_call details.tl-thought summary",
            ))
            .await?
            .text()
            .await?;
        assert_eq!(thought, "thought · reasoning · 1 recalculated");
        let fix = client
            .find(Locator::Css(
                "#timeline li.model_call details.tl-thought code",
            ))
            .await?
            .prop("textContent")
            .await?;
        assert_eq!(fix.as_deref(), Some("3 + 4 = 8 → 7"));
        let calls = client
            .find_all(Locator::Css("#timeline li.model_call"))
            .await?;
        assert!(
            calls[0]
                .find_all(Locator::Css("li.msg.feedback"))
                .await?
                .is_empty(),
            "the first call has no feedback"
        );
        calls[1]
            .find(Locator::Css("details.tl-messages summary"))
            .await?
            .click()
            .await?;
        let summary = calls[1]
            .find(Locator::Css("details.tl-messages summary"))
            .await?
            .text()
            .await?;
        assert!(
            summary.contains("2 new, 1 correction feedback"),
            "{summary}"
        );
        let feedback = calls[1].find_all(Locator::Css("li.msg.feedback")).await?;
        assert_eq!(feedback.len(), 1);
        let text = feedback[0].text().await?;
        assert!(
            text.contains("correction feedback") && text.contains("new in this call"),
            "{text}"
        );
        let request = calls[1]
            .find(Locator::Css("li.msg.request"))
            .await?
            .text()
            .await?;
        assert!(request.contains("What is 2*(3+4)?"), "{request}");
        screenshot(&client, "run.png").await;

        let run_url = client.current_url().await?;
        client.goto(&server.url("/#/")).await?;
        let row = client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#runs-body tr"))
            .await?;
        let text = row.text().await?;
        assert!(
            text.contains("What is 2*(3+4)?") && text.contains("satisfied"),
            "{text}"
        );
        let run_id = row.attr("data-run").await?.unwrap_or_default();
        assert!(
            run_url.as_str().ends_with(&format!("#/runs/{run_id}")),
            "the row's run {run_id:?} is the run at {run_url}"
        );
        let bars = client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#chart rect[data-category=invalid_json]"))
            .await?;
        assert_eq!(
            bars.attr("fill").await?.as_deref(),
            Some("#2f5bd3"),
            "the most frequent category has the first colour"
        );
        let legend = client
            .find(Locator::Css("#chart-legend li[data-category=unknown_tool]"))
            .await?;
        assert_eq!(legend.text().await?, "unknown_tool 1");
        screenshot(&client, "list.png").await;
        legend.click().await?;
        let category = client.find(Locator::Id("filter-category")).await?;
        assert_eq!(
            category.prop("value").await?.as_deref(),
            Some("unknown_tool")
        );
        client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css(&format!("#runs-body tr[data-run='{run_id}']")))
            .await?;
        category.select_by_value("echo").await?;
        client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#runs-empty:not([hidden])"))
            .await?;
        category.select_by_value("").await?;

        let status = client.find(Locator::Id("filter-status")).await?;
        status.select_by_value("failed").await?;
        client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#runs-empty:not([hidden])"))
            .await?;
        let empty = client.find(Locator::Id("runs-empty")).await?.text().await?;
        assert_eq!(empty, "No runs match these filters.");
        assert!(
            client
                .find_all(Locator::Css("#runs-body tr"))
                .await?
                .is_empty()
        );
        status.select_by_value("finished").await?;
        client
            .find(Locator::Id("filter-stop"))
            .await?
            .select_by_value("final")
            .await?;
        client
            .find(Locator::Id("filter-since"))
            .await?
            .select_by_value("3600000")
            .await?;
        let row = client
            .wait()
            .at_most(wait)
            .for_element(Locator::Css(&format!("#runs-body tr[data-run='{run_id}']")))
            .await?;
        screenshot(&client, "list-filtered.png").await;
        row.click().await?;
        let opened = client.current_url().await?;
        assert_eq!(opened.as_str(), run_url.as_str());
        Ok::<_, fantoccini::error::CmdError>(())
    }
    .await;

    let _ = client.close().await;
    let _ = driver.kill().await;
    server.stop().await;
    result.expect("the dashboard behaves");
}
