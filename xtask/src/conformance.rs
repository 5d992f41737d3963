//! `cargo xtask conformance`: the MCP conformance suite (`@modelcontextprotocol/conformance`) in
//! client mode against `crates/sinew-mcp/examples/conformance_client.rs`.
//!
//! - 0.1.16: every client scenario that is not about OAuth, one by one.
//! - 0.2.0-alpha.12: `--requirements 2026-07-28`, with the OAuth scenarios as the only expected
//!   failures (the suite fails the run if any other scenario fails, or if an OAuth one passes).
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

    /// The client scenarios a suite version lists, OAuth ones apart.
    fn client_scenarios(&self, cli: &Path) -> Result<(Vec<String>, Vec<String>)> {
        let (ok, listing) = self.run(cli, &["list", "--client"])?;
        if !ok {
            bail!("conformance list failed:\n{listing}");
        }
        let names = listing
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- "))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_owned);
        Ok(names.partition(|name| !name.starts_with("auth/")))
    }
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

    println!("\n==> MCP conformance 0.1.16 (client, every non-OAuth scenario)");
    let (scenarios, _) = suite.client_scenarios(&suite.old)?;
    let mut failed = Vec::new();
    let mut checks = 0;
    for scenario in &scenarios {
        let out_dir = out.join("0.1.16");
        let args = ["client", "--command", &client, "--scenario", scenario, "-o", out_dir.to_str().unwrap_or(".")];
        let (ok, text) = suite.run(&suite.old, &args)?;
        let passed = tally(&text, "Passed: ");
        checks += passed;
        println!("  {} {scenario} ({passed} checks passed)", if ok { "pass" } else { "FAIL" });
        if !ok {
            println!("{text}");
            failed.push(scenario.clone());
        }
    }
    println!("<== 0.1.16: {}/{} scenarios passed, {checks} checks", scenarios.len() - failed.len(), scenarios.len());

    println!("\n==> MCP conformance 0.2.0-alpha.12 --requirements 2026-07-28 (OAuth scenarios expected to fail)");
    let (_, oauth) = suite.client_scenarios(&suite.next)?;
    std::fs::create_dir_all(&out)?;
    let baseline = out.join("oauth-baseline.yml");
    let listed: String = oauth.iter().map(|name| format!("  - {name}\n")).collect();
    std::fs::write(&baseline, format!("client:\n{listed}"))?;
    let out_dir = out.join("2026");
    let args = [
        "client",
        "--command",
        &client,
        "--requirements",
        "2026-07-28",
        "--expected-failures",
        baseline.to_str().unwrap_or_default(),
        "-o",
        out_dir.to_str().unwrap_or("."),
    ];
    let (ok, text) = suite.run(&suite.next, &args)?;
    let mut scored = 0;
    let mut passed = 0;
    for line in text.lines() {
        let line = line.trim();
        let (mark, rest) = match line.split_once(' ') {
            Some((mark @ ("✓" | "✗"), rest)) => (mark, rest),
            _ => continue,
        };
        let Some((name, counts)) = rest.split_once(": ") else { continue };
        if name.starts_with("auth/") {
            continue;
        }
        scored += 1;
        if mark == "✓" {
            passed += 1;
        } else {
            failed.push(format!("{name} (2026-07-28)"));
        }
        println!("  {} {name} ({counts})", if mark == "✓" { "pass" } else { "FAIL" });
    }
    if !ok {
        println!("{text}");
        failed.push("the 2026-07-28 requirements run".into());
    }
    println!(
        "<== 2026-07-28: {passed}/{scored} non-OAuth scenarios passed ({} OAuth scenarios not scored)",
        oauth.len()
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
