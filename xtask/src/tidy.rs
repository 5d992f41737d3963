//! The house rules no compiler checks:
//!
//! - every `lib.rs` of a member opens with a `//!` doc;
//! - no unfinished or debugging macros in the sources;
//! - the dependency rules of DESIGN.md: `sinew-core` depends on no sinew crate, providers not on
//!   each other, nothing but applications on the facade, and each crate only on the sinew crates
//!   its row of the design table allows;
//! - every member inherits the workspace lints and takes every dependency from the workspace;
//! - the requirements map of spec 004 names, for every requirement, code and tests that exist
//!   (see `requirements.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The sinew crates each crate may depend on (normal and build dependencies), from DESIGN.md.
/// Dev-dependencies may add `sinew-testing` and providers as test aids.
const ALLOWED: &[(&str, &[&str])] = &[
    ("sinew-core", &[]),
    ("sinew-http", &["sinew-core"]),
    ("sinew-agent", &["sinew-core", "sinew-compaction"]),
    ("sinew-tools", &["sinew-core"]),
    ("sinew-compaction", &["sinew-core"]),
    ("sinew-mcp", &["sinew-core", "sinew-http"]),
    ("sinew-openapi", &["sinew-core", "sinew-http"]),
    ("sinew-session", &["sinew-core"]),
    ("sinew-adk", &["sinew-core", "sinew-agent", "sinew-compaction", "sinew-session"]),
    ("sinew-fluent", &["sinew-adk"]),
    ("sinew-testing", &["sinew-core"]),
];

/// Crates that may depend on anything, the facade included.
const APPLICATIONS: &[&str] = &["sinew", "sinew-server", "sinew-cli", "sinew-e2e", "xtask"];

pub(crate) fn run(root: &Path) -> Result<()> {
    println!("\n==> tidy");
    let mut problems = Vec::new();
    let metadata = metadata(root)?;
    let packages = metadata["packages"].as_array().context("cargo metadata has no packages")?;
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
        let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
        check_dependencies(name, package, &mut problems);
        check_manifest(name, &manifest, &mut problems)?;
        check_sources(&dir, &mut problems)?;
        if name == "sinew" {
            check_facade_defaults(package, &mut problems);
        }
    }
    crate::requirements::check(root, &mut problems)?;
    if problems.is_empty() {
        println!("<== tidy: ok ({} packages)", packages.len());
        Ok(())
    } else {
        for p in &problems {
            eprintln!("tidy: {p}");
        }
        bail!("tidy found {} problem(s)", problems.len())
    }
}

/// Features the facade's default build must leave out: opt-in satellites (REQ-177).
const OPT_IN: &[&str] = &["openapi", "adk", "fluent", "postgres", "testing", "tiktoken"];

/// The facade's default features stay small: none of [`OPT_IN`], directly or through another.
fn check_facade_defaults(package: &Value, problems: &mut Vec<String>) {
    let features = &package["features"];
    let mut pending: Vec<&str> = vec!["default"];
    let mut seen: Vec<&str> = Vec::new();
    while let Some(feature) = pending.pop() {
        if seen.contains(&feature) {
            continue;
        }
        seen.push(feature);
        if OPT_IN.contains(&feature) {
            problems.push(format!("the facade's default features turn on `{feature}`, which must stay opt-in"));
        }
        let enables = features[feature].as_array().into_iter().flatten().filter_map(Value::as_str);
        pending.extend(enables.filter(|f| features.get(*f).is_some()));
    }
}

fn metadata(root: &Path) -> Result<Value> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    serde_json::from_slice(&output.stdout).context("cargo metadata printed invalid json")
}

fn is_provider(name: &str) -> bool {
    name.starts_with("sinew-provider-")
}

/// Checks one package's sinew dependencies against the design's rules.
pub(crate) fn check_dependencies(name: &str, package: &Value, problems: &mut Vec<String>) {
    let deps = package["dependencies"].as_array().map(Vec::as_slice).unwrap_or_default();
    for dep in deps {
        let dep_name = dep["name"].as_str().unwrap_or_default();
        if !dep_name.starts_with("sinew") || APPLICATIONS.contains(&name) {
            continue;
        }
        let dev = dep["kind"].as_str() == Some("dev");
        if dep_name == "sinew" && !APPLICATIONS.contains(&name) {
            problems.push(format!("{name} depends on the facade `sinew`; satellites never do"));
        } else if is_provider(name) && is_provider(dep_name) {
            problems
                .push(format!("provider {name} depends on provider {dep_name}; providers never depend on each other"));
        } else if name == "sinew-core" {
            problems.push(format!("sinew-core depends on {dep_name}; it depends on no sinew crate"));
        } else if !dev && !allowed(name, dep_name) {
            problems.push(format!("{name} depends on {dep_name}, which DESIGN.md does not allow"));
        }
    }
}

fn allowed(name: &str, dep: &str) -> bool {
    if APPLICATIONS.contains(&name) {
        return true;
    }
    if is_provider(name) {
        return dep == "sinew-core" || dep == "sinew-http";
    }
    ALLOWED.iter().find(|(crate_name, _)| *crate_name == name).is_some_and(|(_, deps)| deps.contains(&dep))
}

/// Every member says `[lints] workspace = true` and takes its dependencies from the workspace.
fn check_manifest(name: &str, manifest: &Path, problems: &mut Vec<String>) -> Result<()> {
    let text = std::fs::read_to_string(manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    if !text.contains("[lints]\nworkspace = true") {
        problems.push(format!("{name}: Cargo.toml lacks `[lints] workspace = true`"));
    }
    let mut in_deps = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line.contains("dependencies");
            continue;
        }
        if in_deps && line.contains('=') && !line.starts_with('#') && !line.contains("workspace = true") {
            problems.push(format!("{name}: dependency `{line}` does not come from [workspace.dependencies]"));
        }
    }
    Ok(())
}

fn check_sources(dir: &Path, problems: &mut Vec<String>) -> Result<()> {
    let lib = dir.join("src/lib.rs");
    if lib.exists() {
        let text = std::fs::read_to_string(&lib)?;
        if !text.starts_with("//!") {
            problems.push(format!("{} does not start with a `//!` crate doc", lib.display()));
        }
    }
    // Spelled in pieces so this file does not trip its own check.
    let banned = [concat!("todo", "!("), concat!("unimplemented", "!("), concat!("dbg", "!(")];
    for file in rust_files(dir)? {
        let text = std::fs::read_to_string(&file)?;
        for (number, line) in text.lines().enumerate() {
            if let Some(b) = banned.iter().find(|b| line.contains(*b)) {
                problems.push(format!("{}:{}: `{b}` is not allowed", file.display(), number + 1));
            }
        }
    }
    Ok(())
}

fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() && name != "target" && !name.starts_with('.') {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check_dependencies, check_facade_defaults};

    fn check(name: &str, deps: &[(&str, &str)]) -> Vec<String> {
        let deps: Vec<_> = deps.iter().map(|(n, kind)| json!({"name": n, "kind": kind})).collect();
        let mut problems = Vec::new();
        check_dependencies(name, &json!({"dependencies": deps}), &mut problems);
        problems
    }

    #[test]
    fn the_facade_default_leaves_opt_in_features_out() {
        let check = |features| {
            let mut problems = Vec::new();
            check_facade_defaults(&json!({ "features": features }), &mut problems);
            problems
        };
        let small = json!({"default": ["providers", "tools"], "providers": ["anthropic"], "anthropic": ["dep:x"], "tools": [], "openapi": []});
        assert!(check(small).is_empty());
        let direct = json!({"default": ["openapi"], "openapi": []});
        assert_eq!(check(direct).len(), 1);
        let through = json!({"default": ["providers"], "providers": ["everything"], "everything": ["adk"], "adk": []});
        assert_eq!(check(through), ["the facade's default features turn on `adk`, which must stay opt-in"]);
    }

    #[test]
    fn dependency_rules_of_the_design() {
        assert!(check("sinew-core", &[("serde", "normal")]).is_empty());
        assert_eq!(check("sinew-core", &[("sinew-testing", "dev")]).len(), 1);
        assert!(check("sinew-agent", &[("sinew-core", "normal"), ("sinew-testing", "dev")]).is_empty());
        assert_eq!(check("sinew-agent", &[("sinew-tools", "normal")]).len(), 1);
        assert_eq!(check("sinew-provider-openai-chat", &[("sinew-provider-anthropic", "dev")]).len(), 1);
        assert!(check("sinew-provider-anthropic", &[("sinew-http", "normal"), ("sinew-core", "normal")]).is_empty());
        assert_eq!(check("sinew-tools", &[("sinew", "dev")]).len(), 1);
        assert!(check("sinew", &[("sinew-agent", "normal"), ("sinew-testing", "normal")]).is_empty());
        assert!(check("sinew-e2e", &[("sinew", "dev")]).is_empty());
        assert_eq!(check("sinew-unknown", &[("sinew-core", "normal")]).len(), 1, "new crates must join the table");
    }
}
