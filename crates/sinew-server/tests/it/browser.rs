//! The chat page in a real browser: Debian's headless chromium, driven over WebDriver by its
//! chromedriver (`SINEW_TEST_CHROMEDRIVER`), against a server whose models are scripted. A
//! screenshot of the end is written to `CARGO_TARGET_TMPDIR/chat-page.png`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use sinew_adk::InMemorySessionService;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm, conformance_demo_agent};
use sinew_server::{AdkApi, ChatApi, Routes, ServerConfig, SqliteChatStore, serve};

use crate::chat::Models;

/// A model's answer that would run script if the page took it as HTML.
const HOSTILE: &str =
    r#"<img src=x onerror="document.body.dataset.pwned='yes'"><script>document.body.dataset.pwned='yes'</script>"#;

/// How long the page may take for anything it is waited for.
const PATIENCE: Duration = Duration::from_secs(20);

/// chromedriver on a free port; killed with the value.
struct Driver {
    process: std::process::Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

async fn start_driver() -> Driver {
    let binary = std::env::var("SINEW_TEST_CHROMEDRIVER").expect("SINEW_TEST_CHROMEDRIVER names chromedriver");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let process = std::process::Command::new(&binary)
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let driver = Driver { process, port };
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "chromedriver did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    driver
}

async fn browser(driver: &Driver) -> Client {
    let mut capabilities = serde_json::Map::new();
    let mut options = json!({
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"]
    });
    if let Ok(binary) = std::env::var("SINEW_TEST_CHROMIUM") {
        options["binary"] = json!(binary);
    }
    capabilities.insert("goog:chromeOptions".into(), options);
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("chromedriver starts a chromium session")
}

/// Waits until `condition` (a JavaScript expression) holds in the page.
async fn until(client: &Client, condition: &str) {
    let script = format!("return Boolean({condition});");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if client.execute(&script, vec![]).await.unwrap() == Value::Bool(true) {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            let page = client.source().await.unwrap_or_default();
            panic!("the page never had `{condition}`:\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn texts(client: &Client, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.unwrap() {
        out.push(element.text().await.unwrap());
    }
    out
}

async fn say(client: &Client, text: &str) {
    client.find(Locator::Id("prompt")).await.unwrap().send_keys(text).await.unwrap();
    client.find(Locator::Id("send")).await.unwrap().click().await.unwrap();
}

/// A server with an agent definition (`echo` tool, streamed answer) and the ADK app
/// `demo_agent` (`delete_file` behind a confirmation).
async fn page_server(dir: &std::path::Path) -> SocketAddr {
    let chat_model = ScriptedLlm::new([
        ScriptedAnswer::call("echo", json!({"text": "hi"})),
        ScriptedAnswer::streamed(&["Echo ", "said ", "hi."]),
        ScriptedAnswer::text(HOSTILE),
    ]);
    let models = Models::default().with("mock/chat", chat_model).with("plain", ScriptedLlm::texts(["Plain."]));
    let store = Arc::new(SqliteChatStore::open(dir.join("chat.db")).unwrap());
    let chat = ChatApi::new(store, Arc::new(models.registry())).plain_model(models.get("plain"));
    let adk_model = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("delete_file", json!({"path": "notes.txt"})),
        ScriptedAnswer::text("Deleted notes.txt."),
    ]));
    let agent = conformance_demo_agent(adk_model).unwrap();
    let adk = AdkApi::new(Arc::new(InMemorySessionService::new())).app("demo_agent", Arc::new(agent)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let routes = Routes::new().adk(adk).chat(chat);
    tokio::spawn(serve(listener, routes, ServerConfig::default(), std::future::pending()));
    let definition = json!({"name": "Helper", "model": "mock/chat", "tools": ["echo"]}).to_string();
    let created = crate::send(addr, "POST", "/api/agent-definitions", Some(&definition), &[]).await;
    assert_eq!(created.status, 201, "{}", created.body);
    addr
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(not(sinew_test_browser), ignore = "set SINEW_TEST_CHROMEDRIVER to run the browser test")]
async fn the_chat_page_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let addr = page_server(dir.path()).await;
    let driver = start_driver().await;
    let client = browser(&driver).await;
    let url = format!("http://{addr}/");
    client.goto(&url).await.unwrap();
    until(&client, "document.body.dataset.ready === 'true'").await;

    // An agent definition answers: the tool call shows with its status, the answer streams in.
    let selected = client.find(Locator::Id("target")).await.unwrap().prop("value").await.unwrap();
    assert!(selected.is_some_and(|v| v.starts_with("def:")), "the definition is offered first");
    say(&client, "Echo hi").await;
    until(&client, "document.querySelector('.tool[data-status=completed]')").await;
    until(&client, "[...document.querySelectorAll('.message.assistant')].some(m => m.textContent === 'Echo said hi.')")
        .await;
    let tool = texts(&client, ".tool").await;
    assert!(
        tool[0].contains("echo") && tool[0].contains("completed") && tool[0].contains(r#"{"echo":"hi"}"#),
        "{tool:?}"
    );
    assert_eq!(texts(&client, ".message.user").await, ["Echo hi"]);
    until(&client, "location.hash.startsWith('#chat/')").await;

    // What a model says is text, never markup.
    say(&client, "Say something hostile").await;
    until(
        &client,
        "document.querySelectorAll('.message.assistant').length === 2 && !document.getElementById('send').disabled",
    )
    .await;
    let answers = texts(&client, ".message.assistant").await;
    assert_eq!(answers[1], HOSTILE);
    let injected = client.execute("return [document.querySelectorAll('#messages img, #messages script').length, document.body.dataset.pwned || null];", vec![]).await.unwrap();
    assert_eq!(injected, json!([0, null]));
    let chat_hash: String = client.execute("return location.hash;", vec![]).await.unwrap().as_str().unwrap().into();

    // An ADK app asks for a confirmation; approving it runs the tool.
    client.find(Locator::Id("target")).await.unwrap().select_by_value("app:demo_agent").await.unwrap();
    say(&client, "Delete notes.txt").await;
    let approve = client.wait().at_most(PATIENCE).for_element(Locator::Css(".confirmation button.approve")).await;
    approve.unwrap().click().await.unwrap();
    until(&client, "document.querySelector('.confirmation[data-answer=approved]')").await;
    until(
        &client,
        "[...document.querySelectorAll('.message.assistant')].some(m => m.textContent === 'Deleted notes.txt.')",
    )
    .await;
    let deleted = texts(&client, ".tool[data-status=completed]").await;
    assert!(deleted.iter().any(|t| t.contains("delete_file") && t.contains("notes.txt")), "{deleted:?}");
    let screenshot = client.screenshot().await.unwrap();

    // After a reload the conversations are listed, and the open one comes back.
    client.goto(&format!("{url}{chat_hash}")).await.unwrap();
    client.refresh().await.unwrap();
    until(&client, "document.body.dataset.ready === 'true'").await;
    let listed = texts(&client, "#conversations li").await;
    assert!(listed.iter().any(|t| t == "Echo hi"), "{listed:?}");
    assert!(listed.iter().any(|t| t.starts_with("demo_agent · ")), "{listed:?}");
    assert_eq!(texts(&client, ".message").await, ["Echo hi", "Echo said hi.", "Say something hostile", HOSTILE]);

    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("chat-page.png");
    std::fs::write(&artifact, &screenshot).unwrap();
    assert!(screenshot.starts_with(b"\x89PNG"), "a PNG screenshot");
    client.close().await.unwrap();
}
