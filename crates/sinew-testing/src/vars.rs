//! Environment variables as a map, for credential chains that read their settings through a
//! function (tests cannot change the process's environment).

/// A variable reader answering from `vars` only, as `EntraCredential::from_vars` and
/// `GoogleCredentials::from_vars` take.
pub fn env_vars(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}
