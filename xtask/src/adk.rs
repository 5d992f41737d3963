//! adk-python judges sinew-adk's JSON: `cargo xtask ci` writes what sinew-adk produces (the
//! `adk_wire` example) and runs adk-python's own pydantic models over it
//! (`crates/sinew-adk/tests/data/scripts/validate_adk_json.py`).
//!
//! google-adk 2.13.0 lives in a venv: `SINEW_ADK_VENV` when set, else `target/adk-venv`, created
//! and installed from PyPI when missing (about a minute the first time). A venv that cannot be
//! made fails the run: the check is never skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{step, target_dir};

/// The google-adk release whose JSON sinew-adk matches.
const ADK_VERSION: &str = "2.13.0";

/// The PostgreSQL driver adk-python's `DatabaseSessionService` uses (`postgresql+asyncpg://`).
const ASYNCPG: &str = "asyncpg==0.32.0";

/// The venv's python, with google-adk installed.
pub(crate) fn ensure_venv() -> Result<PathBuf> {
    let venv = match std::env::var_os("SINEW_ADK_VENV").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => target_dir()?.join("adk-venv"),
    };
    let python = venv.join("bin").join("python");
    if has_adk(&python) {
        return Ok(python);
    }
    if !python.exists() {
        let mut create = Command::new("python3");
        create.args(["-m", "venv"]).arg(&venv);
        step("create the google-adk venv", create)
            .context("python3 cannot make a venv (Debian: apt-get install python3-venv)")?;
    }
    let mut install = Command::new(&python);
    // The `db` extra (SQLAlchemy) and asyncpg: the session interop tests run adk-python's
    // `DatabaseSessionService` on SQLite and PostgreSQL.
    install.args(["-m", "pip", "install", "--quiet", &format!("google-adk[db]=={ADK_VERSION}"), ASYNCPG]);
    step(&format!("install google-adk {ADK_VERSION}"), install)?;
    if !has_adk(&python) {
        bail!("google-adk {ADK_VERSION} was installed into {}, but does not import", venv.display());
    }
    Ok(python)
}

fn has_adk(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            &format!(
                "import google.adk, sqlalchemy, asyncpg, aiosqlite, sys; sys.exit(google.adk.__version__ != '{ADK_VERSION}')"
            ),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes sinew-adk's JSON and has adk-python validate every file. `build` is a `cargo` command
/// with the environment of the other steps: the example is built as the test step built it (the
/// whole workspace, every feature), so nothing is compiled a second time.
pub(crate) fn validate(root: &Path, python: &Path, mut build: Command) -> Result<()> {
    let out = target_dir()?.join("adk-wire");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    build.args(["build", "--quiet", "--workspace", "--all-features", "--example", "adk_wire"]);
    step("build sinew-adk's adk_wire example", build)?;
    let mut write =
        Command::new(target_dir()?.join(format!("debug/examples/adk_wire{}", std::env::consts::EXE_SUFFIX)));
    write.arg(&out);
    step("write sinew-adk's JSON", write)?;

    let script = root.join("crates/sinew-adk/tests/data/scripts/validate_adk_json.py");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&out)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let kind = match name.as_str() {
            "events.json" => "events",
            "session.json" | "run-session.json" => "session",
            "sse.txt" | "run-sse.txt" => "sse",
            n if n.starts_with("storage-") => "storage",
            other => bail!("adk_wire wrote `{other}`, which has no validator kind"),
        };
        files.push((kind, path));
    }
    files.sort();
    if files.len() < 6 {
        bail!("adk_wire wrote {} files; expected events, session, sse and storage", files.len());
    }
    println!("\n==> adk-python validates {} files of sinew-adk's JSON", files.len());
    let mut failed = Vec::new();
    for (kind, path) in &files {
        let output = Command::new(python).arg(&script).arg(kind).arg(path).output()?;
        if !output.status.success() {
            println!("{}", String::from_utf8_lossy(&output.stdout));
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            failed.push(path.display().to_string());
        }
    }
    if !failed.is_empty() {
        bail!("adk-python rejects sinew-adk's JSON in {}", failed.join(", "));
    }
    println!("<== adk-python validates sinew-adk's JSON: ok");
    Ok(())
}
