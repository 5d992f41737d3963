//! Tests that need a peer run when the environment names it, and are reported as ignored
//! otherwise: `SINEW_ADK_PYTHON` (a python with google-adk 2.13.0: adk-python reads our YAML) and
//! `SINEW_TEST_DOT` (Graphviz's `dot`: it renders our pictures) and `SINEW_TEST_MERMAID` (a
//! directory with Mermaid's packages, `tests/mermaid/`: its parser reads our pictures). `cargo
//! xtask ci` sets all three, and fails without them.

fn main() {
    for (var, cfg) in [
        ("SINEW_ADK_PYTHON", "sinew_test_adk_python"),
        ("SINEW_TEST_DOT", "sinew_test_dot"),
        ("SINEW_TEST_MERMAID", "sinew_test_mermaid"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
