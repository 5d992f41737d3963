//! The PostgreSQL storage test needs a server: it runs when `SINEW_TEST_POSTGRES_URL` names one
//! (`cargo xtask ci` always does), and is reported as ignored otherwise.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sinew_test_postgres)");
    println!("cargo::rerun-if-env-changed=SINEW_TEST_POSTGRES_URL");
    if std::env::var_os("SINEW_TEST_POSTGRES_URL").is_some_and(|url| !url.is_empty()) {
        println!("cargo::rustc-cfg=sinew_test_postgres");
    }
}
