//! `cargo xtask conformance`: the MCP conformance suite (`@modelcontextprotocol/conformance`) in
//! client mode against `crates/sinew-mcp/examples/conformance_client.rs`.
//!
//! - 0.1.16: every client scenario, OAuth ones included, one by one.
//! - 0.2.0-alpha.12: `--requirements 2026-07-28`, every scenario it requires.
//!
//! Every scenario must pass, OAuth and its extensions included. Scenarios sinew does not pass
//! yet would be listed in [`EXPECTED_FAILURES`] (empty today); one of them passing fails the run
//! too (the list must shrink with the code), as the suite's own baselines do.
//!
//! The suite comes from the peers' directory (`SINEW_PEERS_DIR`, else `target/peers`, installed by
//! `crates/sinew-testing/peers/setup-peers.sh`) and runs on the node 24 installed there.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{step, target_dir};

struct Suite {
    node: PathBuf,
    old: PathBuf,
    next: PathBuf,
}

impl Suite {
    fn locate(peers: &Path) -> Result<Self> {
        let suite = Suite {
            node: peers.join("node24/node_modules/.bin/node"),
            old: peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
            next: peers.join("conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        };
        for path in [&suite.node, &suite.old, &suite.next] {
            if !path.exists() {
                bail!("{} is missing: run `cargo xtask peers {}`", path.display(), peers.display());
            }
        }
        Ok(suite)
    }

    fn run(&self, cli: &Path, args: &[&str]) -> Result<(bool, String)> {
        let output = Command::new(&self.node)
            .arg(cli)
            .args(args)
            .output()
            .with_context(|| format!("cannot run {}", self.node.display()))?;
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        Ok((output.status.success(), text))
    }

    /// The client scenarios a suite version lists.
    fn client_scenarios(&self, cli: &Path) -> Result<Vec<String>> {
        let (ok, listing) = self.run(cli, &["list", "--client"])?;
        if !ok {
            bail!("conformance list failed:\n{listing}");
        }
        Ok(listing
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- "))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
            .collect())
    }
}

/// The scenarios sinew's client does not pass yet, per suite version (`"0.1.16"`,
/// `"2026-07-28"`): none today. A scenario a new suite adds that the client fails goes here
/// with an issue, and comes off when it passes (a listed pass fails the run).
const EXPECTED_FAILURES: &[(&str, &[&str])] = &[];

fn expected_failures(version: &str) -> &'static [&'static str] {
    EXPECTED_FAILURES.iter().find(|(v, _)| *v == version).map_or(&[], |(_, names)| names)
}

/// Records one scenario's outcome: a pass expected to fail, or a failure not expected, fails.
fn score(version: &str, name: &str, passed: bool, counts: &str, failed: &mut Vec<String>) {
    let expected_to_fail = expected_failures(version).contains(&name);
    let verdict = match (passed, expected_to_fail) {
        (true, false) => "pass",
        (false, true) => "fail (expected)",
        (false, false) => {
            failed.push(format!("{name} ({version})"));
            "FAIL"
        }
        (true, true) => {
            failed.push(format!("{name} ({version}) passes: take it off EXPECTED_FAILURES"));
            "PASS (stale expectation)"
        }
    };
    println!("  {verdict} {name} ({counts})");
}

/// Builds the client with `build` (a `cargo` command with the environment of the other steps: the
/// example is built as the test step built it, the whole workspace with every feature, so nothing
/// is compiled a second time) and runs both suites against it.
pub(crate) fn run(peers: &Path, mut build: Command) -> Result<()> {
    let suite = Suite::locate(peers)?;
    build.env("SINEW_PEERS_DIR", peers);
    build.args(["build", "--workspace", "--all-features", "--example", "conformance_client"]);
    step("build the conformance client", build)?;
    let client = target_dir()?.join(format!("debug/examples/conformance_client{}", std::env::consts::EXE_SUFFIX));
    let client = client.to_str().context("the target dir is not UTF-8")?.to_owned();
    let out = std::env::temp_dir().join(format!("sinew-conformance-{}", std::process::id()));

    println!("\n==> MCP conformance 0.1.16 (client, every scenario)");
    let scenarios = suite.client_scenarios(&suite.old)?;
    let mut failed = Vec::new();
    let mut checks = 0;
    for scenario in &scenarios {
        let out_dir = out.join("0.1.16");
        let args = ["client", "--command", &client, "--scenario", scenario, "-o", out_dir.to_str().unwrap_or(".")];
        let (ok, text) = suite.run(&suite.old, &args)?;
        let passed = tally(&text, "Passed: ");
        checks += passed;
        let before = failed.len();
        score("0.1.16", scenario, ok, &format!("{passed} checks passed"), &mut failed);
        if failed.len() > before && !ok {
            println!("{text}");
        }
    }
    let expected = expected_failures("0.1.16").len();
    println!(
        "<== 0.1.16: {}/{} scenarios passed ({expected} expected to fail), {checks} checks",
        scenarios.len() - expected - failed.len(),
        scenarios.len()
    );

    println!("\n==> MCP conformance 0.2.0-alpha.12 --requirements 2026-07-28");
    std::fs::create_dir_all(&out)?;
    let out_dir = out.join("2026");
    let args = ["client", "--command", &client, "--requirements", "2026-07-28", "-o", out_dir.to_str().unwrap_or(".")];
    let (ok, text) = suite.run(&suite.next, &args)?;
    let mut scored = 0;
    let mut passed = 0;
    let mut seen = Vec::new();
    let before = failed.len();
    for line in text.lines() {
        let line = line.trim();
        let (mark, rest) = match line.split_once(' ') {
            Some((mark @ ("✓" | "✗"), rest)) => (mark, rest),
            _ => continue,
        };
        // The summary repeats some scenarios as "✗ name (extension)", without counts.
        let Some((name, counts)) = rest.split_once(": ") else { continue };
        scored += 1;
        passed += usize::from(mark == "✓");
        seen.push(name.to_owned());
        score("2026-07-28", name, mark == "✓", counts, &mut failed);
    }
    // With no failure expected the suite's own verdict must be a pass too (a crash part way, or
    // output this parser misses, fails here).
    if !ok && expected_failures("2026-07-28").is_empty() {
        failed.push("the 2026-07-28 requirements run (the suite exited with a failure)".into());
    }
    for name in expected_failures("2026-07-28").iter().filter(|name| !seen.iter().any(|s| s == *name)) {
        failed.push(format!("{name} (2026-07-28) was not run: take it off EXPECTED_FAILURES"));
    }
    if failed.len() > before {
        println!("{text}");
    }
    println!(
        "<== 2026-07-28: {passed}/{scored} scenarios passed ({} expected to fail)",
        expected_failures("2026-07-28").len()
    );
    let _ = std::fs::remove_dir_all(&out);
    if scored == 0 {
        bail!("the 2026-07-28 run reported no scenario:\n{text}");
    }
    if !failed.is_empty() {
        bail!("MCP conformance failed: {}", failed.join(", "));
    }
    Ok(())
}

/// The first number after `label` in `text` ("Passed: 3/3" → 3).
fn tally(text: &str, label: &str) -> usize {
    text.lines()
        .filter_map(|line| line.split_once(label))
        .filter_map(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .next()
        .unwrap_or(0)
}
