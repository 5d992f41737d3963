//! `sinew-mockllm [PORT]`: serves the reference benchmark's mock model (see
//! `sinew_testing::mockllm`) on 127.0.0.1:PORT (default 8089), in its own process so that a
//! benchmark measures only its client. Prints `listening on http://127.0.0.1:PORT` when ready.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

fn main() {
    let port = match std::env::args().nth(1).map(|a| a.parse::<u16>()) {
        None => 8089,
        Some(Ok(port)) => port,
        Some(Err(_)) => {
            eprintln!("usage: sinew-mockllm [PORT]");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let server = match sinew_testing::MockServer::start_unrecorded(port, sinew_testing::mockllm::respond).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("sinew-mockllm: cannot listen on port {port}: {error}");
                std::process::exit(1);
            }
        };
        println!("listening on {}", server.url());
        let _ = std::io::stdout().flush();
        std::future::pending::<()>().await;
    });
}
