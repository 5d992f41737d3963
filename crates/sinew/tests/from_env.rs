//! `ProviderRegistry::from_env` registers every provider whose configuration is in the
//! environment, all seven of them (REQ-125), and routes Azure and Vertex by their ids.
//!
//! The environment belongs to the process and the workspace forbids the `unsafe` that changing
//! it takes, so `the_registry_follows_this_processs_environment` checks whatever environment it
//! runs in, and the other tests run it again in child processes with environments of their own.

use std::process::Command;

use sinew::{ProviderRegistry, StreamProvider};

/// The configurations `from_env` reads, each with the provider it registers: a provider is
/// configured when one variable of every group is set.
/// (The tests run with every feature: the cloud credential chains' variables count.)
const CONFIGURATIONS: &[(&str, &[&[&str]])] = &[
    ("anthropic", &[&["ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"]]),
    (
        "azure_openai",
        &[
            &["AZURE_OPENAI_API_KEY", "AZURE_CLIENT_ID", "IDENTITY_ENDPOINT"],
            &["AZURE_OPENAI_RESOURCE", "AZURE_OPENAI_ENDPOINT"],
        ],
    ),
    ("google", &[&["GEMINI_API_KEY", "GOOGLE_API_KEY"]]),
    ("google_vertex", &[&["GOOGLE_CLOUD_PROJECT"], &["GOOGLE_VERTEX_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"]]),
];

/// The models whose routes a child prints.
const MODELS: &[&str] = &[
    "claude-sonnet-4-5",
    "gpt-5",
    "gemini-2.5-flash",
    "google_vertex/gemini-2.5-flash",
    "azure_openai/my-gpt-5-deployment",
    "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "openai/gpt-4o",
];

fn is_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.trim().is_empty())
}

/// The provider ids this environment configures, sorted.
fn expected() -> Vec<String> {
    let mut ids: Vec<String> = CONFIGURATIONS
        .iter()
        .filter(|(_, groups)| groups.iter().all(|group| group.iter().any(|name| is_set(name))))
        .map(|(id, _)| (*id).to_owned())
        .collect();
    // Bedrock: a region, and an API key, both halves of an access key, or what names the
    // chain's other credentials.
    let aws_keys = is_set("AWS_ACCESS_KEY_ID") && is_set("AWS_SECRET_ACCESS_KEY");
    let aws_chain = ["AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI"]
        .iter()
        .chain(&["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_BEARER_TOKEN_BEDROCK"])
        .any(|name| is_set(name));
    if (is_set("AWS_REGION") || is_set("AWS_DEFAULT_REGION")) && (aws_chain || aws_keys) {
        ids.push("bedrock".into());
    }
    // OpenAI's key, or a compatible server behind OPENAI_BASE_URL, which speaks only Chat.
    let base_url = std::env::var("OPENAI_BASE_URL").ok().filter(|u| !u.trim().is_empty());
    match base_url {
        Some(url) if !url.contains("api.openai.com") => ids.push("openai-compatible".into()),
        _ if is_set("OPENAI_API_KEY") => ids.extend(["openai".into(), "openai_responses".into()]),
        _ => {}
    }
    ids.sort_unstable();
    ids
}

#[test]
#[expect(clippy::print_stdout, reason = "the parent tests read what the child prints")]
fn the_registry_follows_this_processs_environment() {
    let registry = ProviderRegistry::from_env();
    let mut ids: Vec<String> = registry.ids().into_iter().map(str::to_owned).collect();
    ids.sort_unstable();
    assert_eq!(ids, expected());
    println!("PROVIDERS {}", ids.join(" "));
    println!("DEFAULT {}", registry.default_model().unwrap_or_else(|| "none".into()));
    if !registry.is_empty() {
        for model in MODELS {
            println!("ROUTE {model} {}", registry.provider_id_for(model));
        }
    }
}

/// Runs `the_registry_follows_this_processs_environment` with only `vars` (and `PATH`) set, and
/// returns what it printed.
fn child(vars: &[(&str, &str)]) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "the_registry_follows_this_processs_environment", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("1 passed"), "the child ran the test: {stdout}");
    stdout
}

fn line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    // The harness prints the test's name on the line its first output starts.
    stdout
        .lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no {prefix:?} in {stdout}"))
}

const ALL_SEVEN: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "sk-ant-test"),
    ("OPENAI_API_KEY", "sk-test"),
    ("AZURE_OPENAI_API_KEY", "az-key"),
    ("AZURE_OPENAI_ENDPOINT", "https://my-resource.openai.azure.com/openai"),
    ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
    ("GEMINI_API_KEY", "AIza-test"),
    ("GOOGLE_CLOUD_PROJECT", "proj"),
    ("GOOGLE_VERTEX_ACCESS_TOKEN", "ya29.token"),
    ("AWS_REGION", "us-east-1"),
    ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key"),
];

#[test]
fn all_seven_providers_are_registered_and_routed() {
    assert_eq!(line(&child(&[]), "PROVIDERS").trim(), "", "no configuration, no provider");

    let stdout = child(ALL_SEVEN);
    assert_eq!(
        line(&stdout, "PROVIDERS "),
        "anthropic azure_openai bedrock google google_vertex openai openai_responses"
    );
    assert_eq!(line(&stdout, "DEFAULT "), "anthropic/claude-sonnet-4-5");
    // Families go to their first-party service; an id prefix reaches Azure and Vertex.
    for (model, provider) in [
        ("claude-sonnet-4-5", "anthropic"),
        ("gpt-5", "openai_responses"),
        ("gemini-2.5-flash", "google"),
        ("google_vertex/gemini-2.5-flash", "google_vertex"),
        ("azure_openai/my-gpt-5-deployment", "azure_openai"),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock"),
        ("openai/gpt-4o", "openai"),
    ] {
        assert_eq!(line(&stdout, &format!("ROUTE {model} ")), provider, "{model}");
    }
}

#[test]
fn a_compatible_server_replaces_openais_two_protocols_and_alternatives_configure_the_rest() {
    let stdout = child(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("ANTHROPIC_OAUTH_TOKEN", "sk-ant-oat-test"),
        ("AZURE_OPENAI_API_KEY", "az-key"),
        ("AZURE_OPENAI_RESOURCE", "my-resource"),
        ("GOOGLE_API_KEY", "AIza-test"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ]);
    assert_eq!(line(&stdout, "PROVIDERS "), "anthropic azure_openai bedrock google openai-compatible");
    // Only providers whose models the caller names: no default.
    let stdout = child(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("AZURE_OPENAI_API_KEY", "az-key"),
        ("AZURE_OPENAI_RESOURCE", "my-resource"),
    ]);
    assert_eq!(line(&stdout, "DEFAULT "), "none");
    // An empty OPENAI_BASE_URL is unset: OpenAI's two protocols, Responses first.
    let stdout = child(&[("OPENAI_BASE_URL", ""), ("OPENAI_API_KEY", "sk-test")]);
    assert_eq!(line(&stdout, "PROVIDERS "), "openai openai_responses");
    assert_eq!(line(&stdout, "DEFAULT "), "openai_responses/gpt-5");
    // Vertex needs its token as well as its project; SigV4 both halves of the key; Entra ID
    // something that names it. Credentials only the machine knows are not guessed at.
    let stdout = child(&[
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AZURE_OPENAI_RESOURCE", "my-resource"),
    ]);
    assert_eq!(line(&stdout, "PROVIDERS").trim(), "");
    // The cloud credential chains' own variables.
    let stdout = child(&[
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/adc.json"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_PROFILE", "bedrock"),
        ("AZURE_OPENAI_RESOURCE", "my-resource"),
        ("AZURE_CLIENT_ID", "app"),
    ]);
    assert_eq!(line(&stdout, "PROVIDERS "), "azure_openai bedrock google_vertex");
}
