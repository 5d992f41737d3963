//! The test that has adk-python read sinew-fluent's YAML runs when `SINEW_ADK_PYTHON` names a
//! python with google-adk 2.13.0, and is reported as ignored otherwise. `cargo xtask ci` sets it,
//! and fails without it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sinew_test_adk_python)");
    println!("cargo::rerun-if-env-changed=SINEW_ADK_PYTHON");
    if std::env::var_os("SINEW_ADK_PYTHON").is_some_and(|value| !value.is_empty()) {
        println!("cargo::rustc-cfg=sinew_test_adk_python");
    }
}
