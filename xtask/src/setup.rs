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
/// the lock file changes.
pub(crate) fn ensure_mermaid(root: &Path) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("SINEW_TEST_MERMAID").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let dir = target_dir()?.join("mermaid");
    let source = root.join("crates/sinew-fluent/tests/mermaid");
    let lock = std::fs::read(source.join("package-lock.json")).context("reading the mermaid lock file")?;
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    if installed.as_deref() == Some(lock.as_slice()) && dir.join("node_modules/mermaid/package.json").is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(source.join(file), dir.join(file)).with_context(|| format!("copying {file}"))?;
    }
    let mut install = Command::new("npm");
    install.args(["ci", "--no-audit", "--no-fund", "--silent"]).current_dir(&dir);
    step("install mermaid's parser", install)
        .context("npm cannot install mermaid (Debian: apt-get install nodejs npm; or set SINEW_TEST_MERMAID)")?;
    Ok(dir)
}
