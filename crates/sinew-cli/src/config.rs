//! The configuration file (`~/.config/sinew/config.toml`) and where things live on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

/// `config.toml`. Every field is optional; unknown keys are errors, so a typo is not silently
/// ignored. `docs/cli.md` documents each key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// The default model: `NAME/MODEL` (a provider of this file or a provider kind), or a model
    /// one configured provider serves.
    pub(crate) model: Option<String>,
    /// The default provider, by name.
    pub(crate) provider: Option<String>,
    /// `off`, `minimal`, `low`, `medium` or `high`.
    pub(crate) thinking: Option<String>,
    /// Print thinking in full (dimmed) instead of one collapsed line.
    #[serde(default)]
    pub(crate) show_thinking: bool,
    /// Where sessions are saved: a SQLite file path, or a `postgres://` URL.
    pub(crate) session_store: Option<String>,
    /// Added to the built-in system prompt.
    pub(crate) instructions: Option<String>,
    #[serde(default)]
    pub(crate) providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub(crate) mcp: McpConfig,
}

/// One `[providers.NAME]` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderConfig {
    /// The wire protocol; defaults to the table's name when that names a kind.
    pub(crate) kind: Option<String>,
    pub(crate) base_url: Option<String>,
    /// The key itself. Prefer `api_key_env`, which keeps secrets out of the file.
    pub(crate) api_key: Option<String>,
    /// The environment variable that holds the key.
    pub(crate) api_key_env: Option<String>,
    /// This provider's default model.
    pub(crate) model: Option<String>,
    /// Azure OpenAI: the resource name (the v1 API), or `endpoint` with `api_version`.
    pub(crate) resource: Option<String>,
    pub(crate) endpoint: Option<String>,
    pub(crate) api_version: Option<String>,
    /// Vertex AI.
    pub(crate) project: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) access_token_env: Option<String>,
    /// Bedrock (credentials from AWS's default chain, or `AWS_BEARER_TOKEN_BEDROCK`), and the
    /// AWS profile to take them from.
    pub(crate) region: Option<String>,
    pub(crate) profile: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpConfig {
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, McpServerConfig>,
}

/// One `[mcp.servers.NAME]` table: a `command` (stdio) or a `url` (Streamable HTTP).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerConfig {
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// sinew's own variables the server may read, besides HOME, LOGNAME, PATH, SHELL, TERM, USER.
    #[serde(default)]
    pub(crate) inherit_env: Vec<String>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// Tool names become `{prefix}__{tool}`; defaults to the table's name.
    pub(crate) prefix: Option<String>,
    /// Ask before each call of this server's tools.
    #[serde(default)]
    pub(crate) require_approval: bool,
    /// MCP authorization for an HTTP server: `true`, or a table of settings.
    pub(crate) oauth: Option<McpOAuth>,
}

/// `oauth = true` (or `false`), or `oauth = { ... }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum McpOAuth {
    Enabled(bool),
    Settings(McpOAuthSettings),
}

impl McpOAuth {
    /// The settings, when authorization is on.
    pub(crate) fn settings(&self) -> Option<McpOAuthSettings> {
        match self {
            McpOAuth::Enabled(true) => Some(McpOAuthSettings::default()),
            McpOAuth::Enabled(false) => None,
            McpOAuth::Settings(settings) => Some(settings.clone()),
        }
    }
}

/// `[mcp.servers.NAME.oauth]`: everything is optional; without a client the CLI registers itself.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpOAuthSettings {
    /// A client registered with the server's authorization server ahead of time.
    pub(crate) client_id: Option<String>,
    /// The environment variable that holds that client's secret.
    pub(crate) client_secret_env: Option<String>,
    /// The scopes to ask for, space-separated (default: what the server suggests).
    pub(crate) scopes: Option<String>,
    /// The loopback port the browser comes back to (default 8976).
    pub(crate) redirect_port: Option<u16>,
    /// This client's ID metadata document, used as its id where the server supports them.
    pub(crate) client_metadata_url: Option<String>,
}

impl Config {
    /// Reads `path`. A missing file is an empty configuration unless it was asked for by name.
    pub(crate) fn load(path: &Path, explicit: bool) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(Config::default()),
            Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
        };
        toml::from_str(&text).with_context(|| format!("invalid configuration in {}", path.display()))
    }
}

/// `$XDG_CONFIG_HOME/sinew/config.toml`, else `~/.config/sinew/config.toml`, on every platform.
pub(crate) fn default_config_path() -> Option<PathBuf> {
    xdg_dir("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("sinew").join("config.toml"))
}

/// `$XDG_DATA_HOME/sinew`, else `~/.local/share/sinew`: the session database and the REPL history.
pub(crate) fn data_dir() -> Option<PathBuf> {
    xdg_dir("XDG_DATA_HOME", ".local/share").map(|dir| dir.join("sinew"))
}

fn xdg_dir(variable: &str, under_home: &str) -> Option<PathBuf> {
    match std::env::var_os(variable) {
        Some(dir) if Path::new(&dir).is_absolute() => Some(PathBuf::from(dir)),
        _ => std::env::var_os("HOME").filter(|home| !home.is_empty()).map(|home| PathBuf::from(home).join(under_home)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        toml::from_str(text).map_err(Into::into)
    }

    #[test]
    fn the_documented_example_parses() {
        let config = parse(
            r#"
            model = "ollama/qwen3-coder"
            thinking = "medium"
            [providers.anthropic]
            api_key_env = "MY_ANTHROPIC_KEY"
            [providers.ollama]
            kind = "openai"
            base_url = "http://localhost:11434/v1"
            [mcp.servers.fs]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
            require_approval = true
            [mcp.servers.remote]
            url = "https://example.com/mcp"
            headers = { Authorization = "Bearer x" }
            "#,
        )
        .unwrap();
        assert_eq!(config.model.as_deref(), Some("ollama/qwen3-coder"));
        assert_eq!(config.providers["ollama"].kind.as_deref(), Some("openai"));
        assert_eq!(config.providers["anthropic"].api_key_env.as_deref(), Some("MY_ANTHROPIC_KEY"));
        assert!(config.mcp.servers["fs"].require_approval);
        assert_eq!(config.mcp.servers["remote"].headers["Authorization"], "Bearer x");
    }

    #[test]
    fn oauth_is_a_switch_or_a_table() {
        let config = parse(
            r#"
            [mcp.servers.a]
            url = "https://a.example/mcp"
            oauth = true
            [mcp.servers.b]
            url = "https://b.example/mcp"
            oauth = false
            [mcp.servers.c]
            url = "https://c.example/mcp"
            oauth = { client_id = "cli", client_secret_env = "C_SECRET", scopes = "read write", redirect_port = 9000 }
            "#,
        )
        .unwrap();
        let servers = &config.mcp.servers;
        assert_eq!(servers["a"].oauth.as_ref().and_then(McpOAuth::settings).map(|s| s.redirect_port), Some(None));
        assert!(servers["b"].oauth.as_ref().and_then(McpOAuth::settings).is_none());
        let c = servers["c"].oauth.as_ref().and_then(McpOAuth::settings).unwrap();
        assert_eq!((c.client_id.as_deref(), c.redirect_port), (Some("cli"), Some(9000)));
        assert!(parse("[mcp.servers.d]\nurl = \"https://d\"\noauth = { client = \"typo\" }").is_err());
    }

    #[test]
    fn the_manuals_example_is_a_valid_configuration() {
        let manual = include_str!("../../../docs/cli.md");
        let start = manual.find("```toml\n").expect("docs/cli.md has a toml example") + "```toml\n".len();
        let end = start + manual[start..].find("```").expect("the example ends");
        let config = parse(&manual[start..end]).unwrap();
        assert_eq!(config.providers.len(), 5);
        assert_eq!(config.providers["ollama"].kind.as_deref(), Some("openai"));
        assert_eq!(config.mcp.servers["tracker"].prefix.as_deref(), Some("jira"));
        assert_eq!(config.session_store.as_deref(), Some("postgres://sinew@db.internal/sinew"));
    }

    #[test]
    fn typos_are_errors_that_name_the_key() {
        let error = parse("[providers.anthropic]\napi_kee = \"x\"\n").unwrap_err();
        assert!(format!("{error:#}").contains("api_kee"), "{error:#}");
        let error = parse("modle = \"x\"\n").unwrap_err();
        assert!(format!("{error:#}").contains("modle"), "{error:#}");
    }

    #[test]
    fn a_missing_file_is_empty_unless_named() {
        let missing = Path::new("/nonexistent/sinew/config.toml");
        assert!(Config::load(missing, false).unwrap().providers.is_empty());
        let error = Config::load(missing, true).unwrap_err();
        assert!(format!("{error:#}").contains("cannot read /nonexistent/sinew/config.toml"), "{error:#}");
    }
}
