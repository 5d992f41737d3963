//! `cargo xtask live`: the live provider tests (`crates/sinew/tests/live.rs`) whose credentials
//! are in the environment; every other one is named as skipped, with the variables that would
//! turn it on. Not part of `cargo xtask ci`: CI has no credentials, and these tests cost money.

use anyhow::{Result, bail};

/// Each live test, and what it needs: one variable of every group (the rules of
/// `ProviderRegistry::from_env`, which the test itself uses).
const TESTS: &[(&str, &[&[&str]])] = &[
    ("anthropic", &[&["ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"]]),
    ("openai", &[&["OPENAI_API_KEY"]]),
    ("openai_responses", &[&["OPENAI_API_KEY"]]),
    (
        "azure_openai",
        &[&["AZURE_OPENAI_API_KEY"], &["AZURE_OPENAI_RESOURCE", "AZURE_OPENAI_ENDPOINT"], &["AZURE_OPENAI_DEPLOYMENT"]],
    ),
    ("google", &[&["GEMINI_API_KEY", "GOOGLE_API_KEY"]]),
    ("google_vertex", &[&["GOOGLE_CLOUD_PROJECT"], &["GOOGLE_VERTEX_ACCESS_TOKEN"]]),
    ("bedrock", &[&["AWS_REGION", "AWS_DEFAULT_REGION"], &["AWS_BEARER_TOKEN_BEDROCK", "AWS_SECRET_ACCESS_KEY"]]),
    ("openai_compatible", &[&["OPENAI_BASE_URL"]]),
];

/// The tests to run, and the skipped ones with why.
fn plan(var: &dyn Fn(&str) -> Option<String>) -> (Vec<&'static str>, Vec<(&'static str, String)>) {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    // A compatible server behind OPENAI_BASE_URL replaces OpenAI's own two protocols.
    let compatible = var("OPENAI_BASE_URL").is_some_and(|u| !u.trim().is_empty() && !u.contains("api.openai.com"));
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for (test, groups) in TESTS {
        let missing: Vec<String> =
            groups.iter().filter(|group| !group.iter().any(|name| set(name))).map(|group| group.join(" or ")).collect();
        let reason = match *test {
            "openai" | "openai_responses" if compatible => {
                Some("OPENAI_BASE_URL names a compatible server, not OpenAI".to_owned())
            }
            "openai_compatible" if !compatible => Some("OPENAI_BASE_URL is not set to a compatible server".to_owned()),
            "bedrock" if !set("AWS_BEARER_TOKEN_BEDROCK") && !set("AWS_ACCESS_KEY_ID") && missing.is_empty() => {
                Some("set AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY".to_owned())
            }
            _ if !missing.is_empty() => Some(format!("set {}", missing.join(", and "))),
            _ => None,
        };
        match reason {
            Some(reason) => skipped.push((*test, reason)),
            None => run.push(*test),
        }
    }
    (run, skipped)
}

pub(crate) fn run() -> Result<()> {
    println!("\n==> live provider tests");
    let (run, skipped) = plan(&|name| std::env::var(name).ok());
    for (test, reason) in &skipped {
        println!("skipped: {test}: {reason}");
    }
    if run.is_empty() {
        println!("<== live: no provider is configured, no live test ran ({} skipped)", skipped.len());
        return Ok(());
    }
    let mut command = crate::cargo();
    command.args(["test", "-p", "sinew", "--all-features", "--test", "live", "--"]).arg("--exact").args(&run);
    let status = command.status()?;
    if !status.success() {
        bail!("live tests failed ({status})");
    }
    println!("<== live: {} ran, {} skipped", run.len(), skipped.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plan;

    fn plan_with(vars: &[(&str, &str)]) -> (Vec<&'static str>, Vec<(&'static str, String)>) {
        plan(&|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn nothing_configured_skips_everything_and_says_why() {
        let (run, skipped) = plan_with(&[]);
        assert!(run.is_empty());
        assert_eq!(skipped.len(), 8);
        assert!(skipped.contains(&("anthropic", "set ANTHROPIC_API_KEY or ANTHROPIC_OAUTH_TOKEN".into())));
        assert!(
            skipped.contains(&("google_vertex", "set GOOGLE_CLOUD_PROJECT, and GOOGLE_VERTEX_ACCESS_TOKEN".into()))
        );
    }

    #[test]
    fn each_test_runs_when_its_service_is_configured() {
        let (run, skipped) = plan_with(&[
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_API_KEY", "k"),
            ("AZURE_OPENAI_API_KEY", "k"),
            ("AZURE_OPENAI_RESOURCE", "r"),
            ("AZURE_OPENAI_DEPLOYMENT", "d"),
            ("GOOGLE_API_KEY", "k"),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_VERTEX_ACCESS_TOKEN", "t"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_BEARER_TOKEN_BEDROCK", "k"),
        ]);
        assert_eq!(
            run,
            ["anthropic", "openai", "openai_responses", "azure_openai", "google", "google_vertex", "bedrock"]
        );
        assert_eq!(skipped, [("openai_compatible", "OPENAI_BASE_URL is not set to a compatible server".to_owned())]);
    }

    #[test]
    fn a_compatible_server_and_partial_credentials() {
        let (run, skipped) = plan_with(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
            ("OPENAI_API_KEY", "k"),
            ("AZURE_OPENAI_API_KEY", "k"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ]);
        assert_eq!(run, ["openai_compatible"]);
        let reason = |test: &str| skipped.iter().find(|(t, _)| *t == test).map(|(_, r)| r.as_str()).unwrap();
        assert_eq!(reason("openai"), "OPENAI_BASE_URL names a compatible server, not OpenAI");
        assert_eq!(
            reason("azure_openai"),
            "set AZURE_OPENAI_RESOURCE or AZURE_OPENAI_ENDPOINT, and AZURE_OPENAI_DEPLOYMENT"
        );
        assert_eq!(reason("bedrock"), "set AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY");
    }
}
