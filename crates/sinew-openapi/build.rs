//! The Prism tests need the specs and the Prism mock server that `cargo xtask peers`
//! installs: they run when `SINEW_PEERS_DIR` names the install (`cargo xtask ci` sets it) and are
//! reported as ignored otherwise.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sinew_test_peers)");
    println!("cargo::rerun-if-env-changed=SINEW_PEERS_DIR");
    if std::env::var_os("SINEW_PEERS_DIR").is_some_and(|dir| !dir.is_empty()) {
        println!("cargo::rustc-cfg=sinew_test_peers");
    }
}
