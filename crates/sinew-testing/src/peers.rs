//! For tests against the real servers of `peers/` (MCP servers, Prism): where
//! `peers/setup-peers.sh` installed them (`SINEW_PEERS_DIR`), a free port, and a server process that
//! is listening before the test goes on and is killed when it is dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// `SINEW_PEERS_DIR`. Panics, saying how to install the peers, when it is unset or empty.
pub fn peers_dir() -> PathBuf {
    let dir = std::env::var_os("SINEW_PEERS_DIR")
        .map(PathBuf::from)
        .expect("set SINEW_PEERS_DIR (`cargo xtask peers DIR` installs the peers)");
    assert!(dir.join("node_modules").is_dir(), "{} holds no peers: run setup-peers.sh", dir.display());
    dir
}

/// A port nothing listens on at the moment.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port")
}

/// A server process listening on 127.0.0.1:`port`; killed when dropped.
#[derive(Debug)]
pub struct PeerProcess {
    _child: Child,
    /// The loopback port the server listens on.
    pub port: u16,
}

impl PeerProcess {
    /// Starts `command` (its output discarded) and waits, up to 20 s, until `port` accepts
    /// connections. Panics if it does not.
    pub async fn start(mut command: Command, port: u16) -> Self {
        let shown = format!("{command:?}");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return PeerProcess { _child: child, port };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{shown} did not listen on {port} within 20 s");
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}
