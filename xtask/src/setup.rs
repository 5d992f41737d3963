//! What `cargo xtask ci` installs when it is missing, so that the README's test command works on
//! a fresh clone: the cargo tools its steps run, and the interop peers.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, has_cargo_subcommand, step, target_dir};

/// Installs the cargo subcommand `name` from the crate `package` (locked) unless it runs.
pub(crate) fn ensure_cargo_tool(name: &str, package: &str) -> Result<()> {
    if has_cargo_subcommand(name) {
        return Ok(());
    }
    let mut install = cargo();
    install.args(["install", "--locked", package]);
    step(&format!("install {package}"), install)?;
    if !has_cargo_subcommand(name) {
        bail!("`cargo install --locked {package}` ran, but `cargo {name}` still does not");
    }
    Ok(())
}

/// The interop peers (MCP servers, the MCP conformance suite, Prism): `SINEW_PEERS_DIR` when it
/// is set, else `target/peers`, installed or brought up to date there by
/// `crates/sinew-testing/peers/setup-peers.sh` (npm and PyPI; about a minute the first time, a
/// second after). A failed install fails the run: the interop tests are never skipped silently.
pub(crate) fn ensure_peers(root: &Path) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("SINEW_PEERS_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let dir = target_dir()?.join("peers");
    install_peers(root, &dir)?;
    Ok(dir)
}

/// Runs the peers' set-up script into `dir`.
pub(crate) fn install_peers(root: &Path, dir: &Path) -> Result<()> {
    for tool in ["node", "npm", "python3"] {
        if Command::new(tool).arg("--version").output().is_err() {
            bail!(
                "the interop peers need `{tool}`, which is not installed (Debian: apt-get install nodejs npm python3-venv)"
            );
        }
    }
    let script = root.join("crates/sinew-testing/peers/setup-peers.sh");
    let mut setup = Command::new("bash");
    setup.arg(&script).arg(dir);
    step("install the interop peers", setup).with_context(|| format!("installing the peers into {}", dir.display()))
}

/// Mermaid's own parser, which sinew-fluent's Mermaid pictures must pass: `SINEW_TEST_MERMAID`
/// when it is set, else `target/mermaid`, where `npm ci` installs the packages that
/// `crates/sinew-fluent/tests/mermaid/package-lock.json` pins (mermaid and jsdom), again whenever
/// the package files change. The test runs them with `node`, which must be 20 or later.
pub(crate) fn ensure_mermaid(root: &Path) -> Result<PathBuf> {
    let version = Command::new("node").arg("--version").output().context(
        "sinew-fluent's Mermaid check needs node 20 or later, which is not installed (Debian: apt-get install nodejs)",
    )?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let major: u32 = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 20 {
        bail!("sinew-fluent's Mermaid check needs node 20 or later; this machine has {version}");
    }
    if let Some(dir) = std::env::var_os("SINEW_TEST_MERMAID").filter(|d| !d.is_empty()) {
        return Ok(std::path::absolute(PathBuf::from(dir))?);
    }
    let dir = target_dir()?.join("mermaid");
    let source = root.join("crates/sinew-fluent/tests/mermaid");
    // What is installed is stamped only once `npm ci` succeeded, so an interrupted install is
    // done again.
    let mut wanted = std::fs::read(source.join("package.json")).context("reading the mermaid package file")?;
    wanted.extend(std::fs::read(source.join("package-lock.json")).context("reading the mermaid lock file")?);
    let stamp = dir.join("installed.stamp");
    if std::fs::read(&stamp).ok().as_deref() == Some(wanted.as_slice()) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir)?;
    let _ = std::fs::remove_file(&stamp);
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(source.join(file), dir.join(file)).with_context(|| format!("copying {file}"))?;
    }
    let mut install = Command::new("npm");
    install.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&dir);
    step("install mermaid's parser", install)?;
    std::fs::write(&stamp, wanted)?;
    Ok(dir)
}
