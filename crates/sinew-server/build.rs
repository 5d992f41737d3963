//! Tests that need a peer run when the environment names it, and are reported as ignored
//! otherwise: `SINEW_TEST_POSTGRES_URL` (a PostgreSQL server), `SINEW_ADK_PYTHON` (a python
//! with google-adk 2.13.0, whose models judge the server's JSON) and `SINEW_TEST_CHROMEDRIVER`
//! (Debian's chromedriver, driving chromium for the chat page's test). `cargo xtask ci` sets
//! all three.

fn main() {
    for (var, cfg) in [
        ("SINEW_TEST_POSTGRES_URL", "sinew_test_postgres"),
        ("SINEW_ADK_PYTHON", "sinew_test_adk_python"),
        ("SINEW_TEST_CHROMEDRIVER", "sinew_test_browser"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
