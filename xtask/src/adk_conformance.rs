//! ADK's own conformance harness (`adk conformance test`, google-adk 2.13.0) against sinew-server:
//! both recorded cases (`crates/sinew-adk/tests/data/conformance/tests`) in both streaming modes,
//! against `conformance/server` (the twin of the harness's demo agent with the replay plugin), a
//! program outside the workspace that depends on the crates by path: what the twin, the plugin and
//! the server need is public API.
//!
//! The harness is hard-wired to `http://127.0.0.1:8000`, so server and harness run together in a
//! network namespace of their own (`unshare --map-root-user --net`), with loopback brought up
//! inside it: the port never clashes with anything.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{step, target_dir};

/// Server and harness, inside the namespace: brings loopback up, starts the server, waits for it,
/// runs the harness, stops the server, and exits with the harness's status.
const SCRIPT: &str = r#"set -u
ip link set lo up
"$SERVER" --recordings "$WORK/tests" > "$WORK/server.log" 2>&1 &
SP=$!
for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.1; done
cd "$WORK"
"$ADK" conformance test tests --generate_report --report_dir "$WORK/report"
RC=$?
kill $SP; wait $SP 2>/dev/null
exit $RC
"#;

/// Builds the server with `build` (a `cargo` command with the environment of the other steps),
/// and runs the harness with the venv's `adk`.
pub(crate) fn run(root: &Path, python: &Path, mut build: Command) -> Result<()> {
    // The workspace's lock file and target directory: the same versions, nothing built twice.
    let program = root.join("conformance/server");
    std::fs::copy(root.join("Cargo.lock"), program.join("Cargo.lock")).context("copying Cargo.lock")?;
    let target = target_dir()?;
    build.arg("build").arg("--manifest-path").arg(program.join("Cargo.toml")).env("CARGO_TARGET_DIR", &target);
    step("build the ADK conformance server (outside the workspace)", build)?;
    let server = target.join("debug/sinew-conformance-server");
    let adk = python.parent().context("the venv's python has no directory")?.join("adk");

    // The harness reads the cases from a copy: nothing it does touches the repository.
    let work = target_dir()?.join("adk-conformance");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("clearing {}", work.display()))?;
    }
    copy_dir(&root.join("crates/sinew-adk/tests/data/conformance/tests"), &work.join("tests"))?;

    println!("\n==> ADK conformance (google-adk 2.13.0's harness, both cases, none and sse)");
    let output = Command::new("unshare")
        .args(["--map-root-user", "--net", "bash", "-c", SCRIPT])
        .env("SERVER", &server)
        .env("ADK", &adk)
        .env("WORK", &work)
        .output()
        .context("cannot run `unshare` (util-linux) for a private network namespace")?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let passes = text.matches("✓ PASS").count();
    let fails = text.matches("✗ FAIL").count();
    if !output.status.success() || fails > 0 || passes != 4 {
        let log = std::fs::read_to_string(work.join("server.log")).unwrap_or_default();
        bail!("ADK conformance failed ({passes} passed, {fails} failed):\n{text}\nserver log:\n{log}");
    }
    println!("<== ADK conformance: {passes}/4 runs passed (2 cases x none, sse)");
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
