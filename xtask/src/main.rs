//! sinew's project automation, run as `cargo xtask <command>`.
//!
//! - `ci`: everything CI checks: format, clippy, tidy, the facade's feature sets, tests, doctests,
//!   docs, adk-python's validation of our ADK JSON, a publish dry run of every crate, cargo-deny.
//!   It installs what it needs and is missing (cargo-nextest, cargo-deny, the interop peers,
//!   google-adk).
//! - `tidy`: the house rules no compiler checks (see [`tidy`]), and the requirements map of spec
//!   004 (see [`requirements`]).
//! - `live`: the live provider tests whose credentials are in the environment (see [`live`]).
//! - `conformance`: the MCP conformance suite against our client (the peers of `SINEW_PEERS_DIR`,
//!   else of `target/peers`, installed when missing), and ADK's conformance harness against
//!   sinew-server (in a network namespace of its own).
//! - `adk`: adk-python's own models validate sinew-adk's JSON (google-adk in `SINEW_ADK_VENV`, else
//!   `target/adk-venv`, installed when missing).
//! - `peers [DIR]`: installs the interop peers into DIR (default `target/peers`).
//! - `bench <name> [args]`: a benchmark (`loop`, `decode`, `e2e`, `adk`, `adk-sessions`, `server`,
//!   `compaction`, `sessions`, `sse`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod adk;
mod adk_conformance;
mod codegen;
mod conformance;
mod fluent;
mod live;
mod requirements;
mod setup;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("tidy") => tidy::run(&root),
        Some("adk") => adk::validate(&root, &adk::ensure_venv()?, cargo()),
        Some("conformance") => {
            conformance::run(&setup::ensure_peers(&root)?, cargo())?;
            adk_conformance::run(&root, &adk::ensure_venv()?, cargo())
        }
        Some("peers") => {
            let dir = match args.get(1) {
                Some(dir) => PathBuf::from(dir),
                None => target_dir()?.join("peers"),
            };
            setup::install_peers(&root, &dir)?;
            println!("SINEW_PEERS_DIR={}", dir.display());
            Ok(())
        }
        Some("codegen") => match &args[1..] {
            [] => codegen::run(&root, false),
            [check] if check == "--check" => codegen::run(&root, true),
            [diff, old, new] if diff == "--diff" => {
                let read = |p: &String| std::fs::read_to_string(p).with_context(|| format!("cannot read {p}"));
                print!("{}", fluent::diff(&read(old)?, &read(new)?)?);
                Ok(())
            }
            other => bail!("usage: cargo xtask codegen [--check | --diff OLD NEW] (not {other:?})"),
        },
        Some("bench") => bench(&args[1..]),
        Some("live") => live::run(),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | tidy | live | adk | conformance | peers [DIR] | codegen [--check | --diff OLD NEW] | bench <loop | decode | build | e2e | adk | adk-sessions | compaction | server | sessions | sse> [args]>"
            );
            std::process::exit(2);
        }
    }
}

/// The workspace root. `cargo run` sets `CARGO_MANIFEST_DIR` at run time; it is read then, not at
/// compile time, so a binary built for another checkout (a shared target dir) still checks this one.
fn project_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from("xtask"), PathBuf::from);
    manifest_dir.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Runs a step, timing it; fails with the step's name.
fn step(name: &str, mut command: Command) -> Result<()> {
    println!("\n==> {name}");
    let start = Instant::now();
    let status = command.status().with_context(|| format!("cannot start {name}"))?;
    println!("<== {name}: {} in {:.1}s", if status.success() { "ok" } else { "FAILED" }, start.elapsed().as_secs_f64());
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

fn has_cargo_subcommand(name: &str) -> bool {
    cargo().args([name, "--version"]).output().is_ok_and(|o| o.status.success())
}

fn ci(root: &Path) -> Result<()> {
    // What the steps need, installed when missing, before anything else takes time.
    setup::ensure_cargo_tool("nextest", "cargo-nextest")?;
    setup::ensure_cargo_tool("deny", "cargo-deny")?;
    let peers = setup::ensure_peers(root)?;
    let adk_python = adk::ensure_venv()?;
    // Every cargo step sees the same environment, so the build scripts that read it agree and
    // nothing is compiled twice.
    let postgres = postgres_url()?;
    let chromedriver = chromedriver()?;
    let dot = graphviz_dot()?;
    let mermaid = setup::ensure_mermaid(root)?;
    let ci_cargo = || {
        let mut command = cargo();
        command.env("SINEW_PEERS_DIR", &peers);
        command.env("SINEW_ADK_PYTHON", &adk_python);
        command.env("SINEW_TEST_POSTGRES_URL", &postgres);
        command.env("SINEW_TEST_CHROMEDRIVER", &chromedriver);
        command.env("SINEW_TEST_DOT", &dot);
        command.env("SINEW_TEST_MERMAID", &mermaid);
        command
    };

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    step("rustfmt", fmt)?;

    let mut clippy = ci_cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"]);
    step("clippy", clippy)?;

    tidy::run(root)?;
    feature_sets(&ci_cargo)?;
    codegen::run(root, true)?;
    fluent::check_snapshot(root, &adk_python)?;

    let mut tests = ci_cargo();
    tests.args(["nextest", "run", "--workspace", "--all-features", "--no-fail-fast"]);
    step("tests", tests)?;

    conformance::run(&peers, ci_cargo())?;
    adk_conformance::run(root, &adk_python, ci_cargo())?;
    adk::validate(root, &adk_python, ci_cargo())?;

    let mut doctests = ci_cargo();
    doctests.args(["test", "--workspace", "--all-features", "--doc"]);
    step("doctests", doctests)?;

    let mut doc = ci_cargo();
    doc.args(["doc", "--workspace", "--all-features", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
    step("rustdoc", doc)?;

    // Every crate can be packaged and published in dependency order (a dev-dependency cycle, a
    // missing version or license fails here). Compiling the packages again is skipped: the
    // steps above build the same sources.
    let mut publish = ci_cargo();
    publish.args(["publish", "--workspace", "--dry-run", "--no-verify", "--allow-dirty", "--quiet"]);
    step("publish dry run", publish)?;

    let mut deny = cargo();
    // Advisories need the network to fetch the database; bans, licenses and sources do not.
    deny.args(["deny", "--all-features", "check", "bans", "licenses", "sources"]);
    step("cargo-deny", deny)?;

    println!("\nci: all steps passed");
    Ok(())
}

/// The facade's feature sets a user picks, each built alone (REQ-177): every other step builds
/// with all features, which hides a `#[cfg]` that only compiles with a neighbour's help.
const FEATURE_SETS: &[&[&str]] = &[
    &["--no-default-features"],
    &[],
    &["--no-default-features", "--features", "openapi"],
    &["--no-default-features", "--features", "adk"],
    &["--no-default-features", "--features", "fluent"],
    &["--no-default-features", "--features", "anthropic,tools"],
    &["--no-default-features", "--features", "mcp"],
    &["--no-default-features", "--features", "sessions"],
    &["--no-default-features", "--features", "testing"],
    &["--no-default-features", "--features", "gemini"],
    &["--no-default-features", "--features", "schema"],
    &["--no-default-features", "--features", "otel"],
    &["--no-default-features", "--features", "aws-credentials"],
    &["--no-default-features", "--features", "google-credentials"],
    &["--no-default-features", "--features", "azure-credentials"],
];

fn feature_sets(ci_cargo: &dyn Fn() -> Command) -> Result<()> {
    for set in FEATURE_SETS {
        let mut clippy = ci_cargo();
        clippy.args(["clippy", "--package", "sinew", "--lib"]).args(*set).args(["--", "-D", "warnings"]);
        let name = if set.is_empty() { "default".to_owned() } else { set.join(" ") };
        step(&format!("facade features: {name}"), clippy)?;
    }
    Ok(())
}

/// The PostgreSQL server the session tests use: `SINEW_TEST_POSTGRES_URL`, else the local one.
/// It must answer: the session stores' tests and the ADK interop tests are part of CI.
fn postgres_url() -> Result<String> {
    const LOCAL: &str = "postgres://postgres@127.0.0.1:5432/test";
    let url = std::env::var("SINEW_TEST_POSTGRES_URL").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| LOCAL.into());
    let host_port = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split(['/', '?']).next())
        .map(|authority| authority.rsplit('@').next().unwrap_or(authority))
        .context("SINEW_TEST_POSTGRES_URL is not a postgres:// URL")?;
    let address = if host_port.contains(':') { host_port.to_owned() } else { format!("{host_port}:5432") };
    let reachable = std::net::ToSocketAddrs::to_socket_addrs(&address)
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|socket| std::net::TcpStream::connect_timeout(&socket, std::time::Duration::from_secs(5)).is_ok());
    if !reachable {
        bail!(
            "PostgreSQL does not answer at {address}: the session tests need a server \
             (set SINEW_TEST_POSTGRES_URL, default {LOCAL})"
        );
    }
    Ok(url)
}

/// The chromedriver the chat page's browser test drives chromium with: `SINEW_TEST_CHROMEDRIVER`,
/// else `chromedriver` on the PATH (Debian: `apt-get install chromium chromium-driver`, which
/// `.ci/run` does).
fn chromedriver() -> Result<PathBuf> {
    tool_on_path("SINEW_TEST_CHROMEDRIVER", "chromedriver").context(
        "chromedriver is not on the PATH: the chat page's browser test needs chromium and its driver \
         (Debian: apt-get install chromium chromium-driver; or set SINEW_TEST_CHROMEDRIVER)",
    )
}

/// Graphviz's `dot`, which renders the pictures sinew-fluent draws.
fn graphviz_dot() -> Result<PathBuf> {
    tool_on_path("SINEW_TEST_DOT", "dot").context(
        "graphviz's dot is not on the PATH: sinew-fluent's pictures are rendered by it \
         (Debian: apt-get install graphviz; or set SINEW_TEST_DOT)",
    )
}

/// The program `var` names, else `name` on the PATH.
fn tool_on_path(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Where cargo puts build output (`CARGO_TARGET_DIR`, else `target` of the workspace).
fn target_dir() -> Result<PathBuf> {
    let output = cargo().args(["metadata", "--format-version", "1", "--no-deps"]).output()?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    metadata["target_directory"].as_str().map(PathBuf::from).context("cargo metadata has no target_directory")
}

fn bench(args: &[String]) -> Result<()> {
    let Some(name) = args.first() else {
        bail!(
            "usage: cargo xtask bench <loop | decode | build | e2e | adk | adk-sessions | compaction | server | sessions | sse> [args]"
        )
    };
    let (package, bench) = match name.as_str() {
        "loop" => ("sinew-agent", "loop"),
        "decode" => ("sinew", "decode"),
        "build" => ("sinew", "build"),
        "e2e" => ("sinew", "e2e"),
        "adk" => ("sinew", "adk"),
        "compaction" => ("sinew-agent", "compaction"),
        "sse" => ("sinew-http", "sse"),
        "sessions" => ("sinew-session", "sessions"),
        "adk-sessions" => ("sinew-adk", "adk_sessions"),
        "server" => ("sinew-server", "server"),
        other => bail!(
            "unknown benchmark `{other}` (known: loop, decode, build, e2e, adk, adk-sessions, compaction, server, sessions, sse)"
        ),
    };
    let mut command = cargo();
    if matches!(name.as_str(), "e2e" | "adk" | "server") {
        // The mock model runs in its own process, so that only the client is measured.
        let mut build = cargo();
        build.args(["build", "--release", "--package", "sinew-testing", "--bin", "sinew-mockllm"]);
        step("build sinew-mockllm", build)?;
        command.env("SINEW_MOCKLLM", target_dir()?.join("release").join("sinew-mockllm"));
    }
    command.args(["bench", "--package", package, "--bench", bench]);
    if name == "e2e" {
        command.args(["--features", "testing"]);
    }
    if name == "adk" {
        command.args(["--features", "testing,adk"]);
    }
    if name == "sessions" && std::env::var_os("SINEW_TEST_POSTGRES_URL").is_some() {
        command.args(["--features", "postgres"]);
    }
    if name == "adk-sessions" {
        command.args(["--features", "postgres"]);
    }
    if name == "server" {
        command.env("SINEW_TEST_POSTGRES_URL", postgres_url()?);
    }
    command.arg("--").args(&args[1..]);
    step(&format!("bench {name}"), command)
}
