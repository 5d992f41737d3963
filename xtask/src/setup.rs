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
