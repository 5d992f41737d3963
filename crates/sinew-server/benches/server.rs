//! `cargo xtask bench server`: sinew-server under concurrent SSE load, on PostgreSQL.
//!
//! ```text
//! cargo xtask bench server [--chats N] [--adk N] [--rounds R] [--tools K] [--tokens T]
//! ```
//!
//! The server runs in a process of its own (this binary again, with `--serve`), on the mock model
//! (`sinew-mockllm`, another process, reached over HTTP through the OpenAI Chat provider) and on
//! PostgreSQL (`SINEW_TEST_POSTGRES_URL`, a schema of its own): chat's tables and ADK's sessions.
//! Each round starts N agent-backed chats (`POST /api/chat/stream`, 100 by default) and N ADK runs
//! (`POST /run_sse`, 100) at once; each turn is K `echo` calls and T streamed tokens. Every frame
//! is checked (every token, every tool call, the final texts), and then every row (chat
//! messages, runs, tool calls, ADK events).
//!
//! Reported: turns per second; the latency the server adds per event (p50, p99): the mock model
//! sends each answer whole, in one write, so the time between the first and the last fragment of
//! a streamed answer at the client, over the gaps between them, is the server's (and the
//! client's) time per event, under the whole load; the turns' times; the server process's CPU per
//! event and its peak memory. The last line is
//! `RESULT {json}`; the exit status is non-zero when anything is missing.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use sinew_adk::{FunctionTool, GetSessionConfig, Llm, LlmAgent, ModelAdapter, PostgresSessionService, SessionService};
use sinew_server::chat::ChatStore;
use sinew_server::{AdkApi, AgentRegistry, ChatApi, PostgresChatStore, Routes, ServerConfig, serve};

const MODEL: &str = "mock/mock-1";
const APP: &str = "bench_agent";

fn fail(message: &str) -> ! {
    eprintln!("bench server: {message}");
    std::process::exit(2);
}

struct Options {
    chats: usize,
    adk: usize,
    rounds: usize,
    tools: usize,
    tokens: usize,
}

fn options(args: &[String]) -> Options {
    let mut o = Options { chats: 100, adk: 100, rounds: 3, tools: 1, tokens: 50 };
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        let value = value.unwrap_or_else(|| fail(&format!("{} needs a number", args[i])));
        match args[i].as_str() {
            "--chats" => o.chats = value,
            "--adk" => o.adk = value,
            "--rounds" => o.rounds = value,
            "--tools" => o.tools = value,
            "--tokens" => o.tokens = value,
            other => fail(&format!("unknown option {other}")),
        }
        i += 2;
    }
    o
}

fn echo() -> FunctionTool {
    FunctionTool::new(
        "echo",
        "Returns the given text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args, _| async move { Ok(json!({"text": args["text"]})) },
    )
}

/// The server process: `--serve MOCK_URL POSTGRES_URL SCHEMA`; prints `listening on ADDR`.
fn run_server(mock: &str, postgres: &str, schema: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let client = sinew::http::HttpClient::builder().pool_max_idle_per_host(256).build();
        let config =
            sinew::openai::OpenAiChatConfig::compatible("mock", format!("{mock}/v1"), sinew::openai::Auth::None);
        let provider: Arc<dyn sinew::StreamProvider> = Arc::new(
            sinew::openai::OpenAiChatProvider::new(config).with_client(client).with_retry(sinew::RetryConfig::none()),
        );
        let model: Arc<dyn Llm> = Arc::new(ModelAdapter::new(provider, "mock-1"));
        let resolved = model.clone();
        let registry = AgentRegistry::new(move |name| (name == MODEL).then(|| resolved.clone())).tool(Arc::new(echo()));
        let store = PostgresChatStore::connect_in(postgres, schema).await.unwrap_or_else(|e| fail(&e.to_string()));
        let chat = ChatApi::new(Arc::new(store), Arc::new(registry));
        let adk_url = sinew_testing::postgres::url_in(postgres, schema);
        let sessions = PostgresSessionService::connect(&adk_url).await.unwrap_or_else(|e| fail(&e.to_string()));
        let agent = LlmAgent::builder(APP)
            .model(model)
            .instruction("Call echo as asked, then answer.")
            .tool(Arc::new(echo()))
            .build()
            .unwrap_or_else(|e| fail(&e.to_string()));
        let adk = AdkApi::new(Arc::new(sessions)).app(APP, Arc::new(agent)).unwrap_or_else(|e| fail(&e.to_string()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        println!("listening on {}", listener.local_addr().expect("an address"));
        let routes = Routes::new().adk(adk).chat(chat);
        serve(listener, routes, ServerConfig::default(), std::future::pending()).await.expect("serving");
    });
}

/// A child process, killed with the value.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_mock() -> (Process, String) {
    let binary = std::env::var("SINEW_MOCKLLM")
        .unwrap_or_else(|_| fail("set SINEW_MOCKLLM to the sinew-mockllm binary (cargo xtask bench server does)"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0);
    let mut child = Command::new(&binary)
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start {binary}: {e}")));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).unwrap_or_default();
    if !line.starts_with("listening on") {
        fail("the mock model did not start");
    }
    (Process(child), format!("http://127.0.0.1:{port}"))
}

fn start_server(mock: &str, postgres: &str, schema: &str) -> (Process, String) {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&e.to_string()));
    let mut child = Command::new(exe)
        .args(["--serve", mock, postgres, schema])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start the server: {e}")));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).unwrap_or_default();
    let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| fail("the server did not start")).to_owned();
    (Process(child), addr)
}

/// What one turn gave: its time, its frames, and whether every token and call arrived.
struct Turn {
    elapsed: Duration,
    frames: usize,
    /// Per event of the streamed answer (see [`gap_ms`]).
    gap_ms: Option<f64>,
    right: bool,
    /// The chat's conversation, or the ADK session.
    id: String,
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// POSTs `body` to `path` and reads the event stream to its end: its `data:` payloads, each with
/// when it arrived, and the whole time.
async fn post_stream(client: &HttpClient, addr: &str, path: &str, body: &Value) -> (Vec<(Value, Instant)>, Duration) {
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request");
    let start = Instant::now();
    let response = client.request(request).await.unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    let status = response.status();
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap_or_else(|e| fail(&format!("{path}: {e}")));
        let Ok(data) = frame.into_data() else { continue };
        let at = Instant::now();
        buffer.extend_from_slice(&data);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let text = String::from_utf8_lossy(&buffer[..end]).into_owned();
            buffer.drain(..end + 2);
            if !status.is_success() {
                fail(&format!("{path}: {status} {text}"));
            }
            if let Some(data) = text.strip_prefix("data: ") {
                let value =
                    serde_json::from_str(data).unwrap_or_else(|e| fail(&format!("a frame that is not JSON ({e})")));
                frames.push((value, at));
            }
        }
    }
    if !status.is_success() {
        fail(&format!("{path}: {status} {}", String::from_utf8_lossy(&buffer)));
    }
    (frames, start.elapsed())
}

/// The time between the first and the last of `arrivals` over the gaps between them: what the
/// server spends on each event of an answer the model sent whole.
fn gap_ms(arrivals: &[Instant]) -> Option<f64> {
    let (first, last) = (arrivals.first()?, arrivals.last()?);
    (arrivals.len() > 1).then(|| last.duration_since(*first).as_secs_f64() * 1000.0 / (arrivals.len() - 1) as f64)
}

async fn chat_turn(client: HttpClient, addr: String, definition: String, options: Arc<Options>) -> Turn {
    let message = format!("tools={} tokens={}", options.tools, options.tokens);
    let body = json!({"message": message, "agentDefinitionId": definition});
    let (frames, elapsed) = post_stream(&client, &addr, "/api/chat/stream", &body).await;
    let arrivals: Vec<Instant> = frames.iter().filter(|(f, _)| f["type"] == "token").map(|(_, at)| *at).collect();
    let frames: Vec<Value> = frames.into_iter().map(|(f, _)| f).collect();
    let tokens: String = frames.iter().filter(|f| f["type"] == "token").filter_map(|f| f["token"].as_str()).collect();
    let completed = frames.iter().filter(|f| f["type"] == "mcp_tool" && f["status"] == "completed").count();
    let done = frames.last().is_some_and(|f| f["type"] == "done" && f.get("messageId").is_some());
    let right = tokens == sinew_testing::mockllm::expected_text(options.tokens) && completed == options.tools && done;
    let id = frames.first().and_then(|f| f["conversationId"].as_str()).unwrap_or_default().to_owned();
    Turn { elapsed, frames: frames.len(), gap_ms: gap_ms(&arrivals), right, id }
}

async fn adk_turn(client: HttpClient, addr: String, index: usize, options: Arc<Options>) -> Turn {
    let id = format!("s{index}-{}", uuid::Uuid::new_v4());
    let create = http::Request::post(format!("http://{addr}/apps/{APP}/users/u/sessions/{id}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("a request");
    let start = Instant::now();
    let created = client.request(create).await.unwrap_or_else(|e| fail(&format!("creating a session: {e}")));
    if !created.status().is_success() {
        fail(&format!("creating a session: {}", created.status()));
    }
    let message = format!("tools={} tokens={}", options.tools, options.tokens);
    let body = json!({"appName": APP, "userId": "u", "sessionId": id, "streaming": true,
        "newMessage": {"role": "user", "parts": [{"text": message}]}});
    let (frames, _) = post_stream(&client, &addr, "/run_sse", &body).await;
    let elapsed = start.elapsed();
    let arrivals: Vec<Instant> = frames.iter().filter(|(f, _)| f["partial"] == true).map(|(_, at)| *at).collect();
    let frames: Vec<Value> = frames.into_iter().map(|(f, _)| f).collect();
    let text = |f: &Value| -> String {
        f["content"]["parts"]
            .as_array()
            .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
            .unwrap_or_default()
    };
    let partial: String = frames.iter().filter(|f| f["partial"] == true).map(text).collect();
    let last = frames.iter().rev().find(|f| f["partial"] != true).map(text).unwrap_or_default();
    let expected = sinew_testing::mockllm::expected_text(options.tokens);
    let errors = frames.iter().any(|f| f.get("error").is_some());
    let right = partial == expected && last == expected && !errors;
    Turn { elapsed, frames: frames.len(), gap_ms: gap_ms(&arrivals), right, id }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let [_, mock, postgres, schema] = args.as_slice() else { fail("--serve MOCK_URL POSTGRES_URL SCHEMA") };
        run_server(mock, postgres, schema);
        return;
    }
    let options = Arc::new(options(&args));
    let postgres = std::env::var("SINEW_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| fail("set SINEW_TEST_POSTGRES_URL (cargo xtask bench server uses the local server)"));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let ok = runtime.block_on(async move {
        let schema = sinew_testing::postgres::TestSchema::create("sinew_bench_server").await;
        let (_mock, mock_url) = start_mock();
        let (server, addr) = start_server(&mock_url, &postgres, schema.name());
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client: HttpClient = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(512).build(connector);

        let definition = json!({"name": "Bench", "model": MODEL, "instruction": "Call echo as asked, then answer.", "tools": ["echo"]});
        let request = http::Request::post(format!("http://{addr}/api/agent-definitions"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(definition.to_string())))
            .expect("a request");
        let created = client.request(request).await.unwrap_or_else(|e| fail(&e.to_string()));
        let created: Value = serde_json::from_slice(&created.into_body().collect().await.expect("a body").to_bytes())
            .unwrap_or_else(|e| fail(&e.to_string()));
        let definition = created["id"].as_str().unwrap_or_else(|| fail(&format!("no definition: {created}"))).to_owned();

        let (mut chat_turns, mut adk_turns) = (Vec::new(), Vec::new());
        let server_cpu0 = cpu_seconds(server.0.id());
        let wall = Instant::now();
        for round in 0..options.rounds {
            let chats = (0..options.chats).map(|_| {
                tokio::spawn(chat_turn(client.clone(), addr.clone(), definition.clone(), options.clone()))
            });
            let runs = (0..options.adk)
                .map(|i| tokio::spawn(adk_turn(client.clone(), addr.clone(), round * options.adk + i, options.clone())));
            let chats: Vec<_> = chats.collect();
            let runs: Vec<_> = runs.collect();
            for chat in chats {
                chat_turns.push(chat.await.expect("a chat turn"));
            }
            for run in runs {
                adk_turns.push(run.await.expect("an ADK turn"));
            }
        }
        let wall = wall.elapsed().as_secs_f64();
        let server_rss_kb = peak_rss_kb(server.0.id());
        let server_cpu_s = cpu_seconds(server.0.id()) - server_cpu0;

        // Every row is there.
        let store = PostgresChatStore::connect_in(&postgres, schema.name()).await.unwrap_or_else(|e| fail(&e.to_string()));
        let mut rows_right = 0;
        for turn in &chat_turns {
            let Ok(id) = uuid::Uuid::parse_str(&turn.id) else { continue };
            let messages = store.messages(id).await.unwrap_or_default();
            let run = messages.get(1).and_then(|m| m.retrieval_context.as_ref()).and_then(|c| c["agent_run_id"].as_str());
            let run = match run.and_then(|r| uuid::Uuid::parse_str(r).ok()) {
                Some(run) => store.run(run).await.unwrap_or_default(),
                None => None,
            };
            if messages.len() == 2 && run.is_some_and(|r| r.tool_calls.len() == options.tools && r.messages.len() == 4) {
                rows_right += 1;
            }
        }
        let sessions = PostgresSessionService::connect(&sinew_testing::postgres::url_in(&postgres, schema.name()))
            .await
            .unwrap_or_else(|e| fail(&e.to_string()));
        for turn in &adk_turns {
            let session = sessions.get_session(APP, "u", &turn.id, GetSessionConfig::default()).await.unwrap_or_default();
            // The message, the calls, the responses, the answer.
            if session.is_some_and(|s| s.events.len() == 4) {
                rows_right += 1;
            }
        }
        drop(server);

        let turns = chat_turns.len() + adk_turns.len();
        let right = chat_turns.iter().chain(&adk_turns).filter(|t| t.right).count();
        let mut per_event: Vec<f64> = chat_turns.iter().chain(&adk_turns).filter_map(|t| t.gap_ms).collect();
        per_event.sort_by(f64::total_cmp);
        let mut turn_ms: Vec<f64> = chat_turns.iter().chain(&adk_turns).map(|t| t.elapsed.as_secs_f64() * 1000.0).collect();
        turn_ms.sort_by(f64::total_cmp);
        let events: usize = chat_turns.iter().chain(&adk_turns).map(|t| t.frames).sum();
        let ok = right == turns && rows_right == turns;
        let (p50, p99) = (percentile(&per_event, 0.5), percentile(&per_event, 0.99));
        println!(
            "{} chats + {} ADK runs at once, {} rounds, {} tools, {} tokens: {turns} turns ({right} right, {rows_right} stored right), {events} events",
            options.chats, options.adk, options.rounds, options.tools, options.tokens
        );
        println!(
            "{:.1} turns/s; added per streamed event p50 {p50:.3} ms, p99 {p99:.3} ms; turn p50 {:.1} ms, p99 {:.1} ms",
            turns as f64 / wall,
            percentile(&turn_ms, 0.5),
            percentile(&turn_ms, 0.99),
        );
        println!(
            "server: {:.3} ms CPU per event, peak RSS {:.1} MB",
            server_cpu_s * 1000.0 / events.max(1) as f64,
            server_rss_kb as f64 / 1024.0
        );
        let result = json!({
            "bench": "server", "chats": options.chats, "adk_runs": options.adk, "rounds": options.rounds,
            "tools": options.tools, "tokens": options.tokens, "turns": turns, "events": events,
            "turns_right": right, "rows_right": rows_right,
            "requests_per_s": round3(turns as f64 / wall), "wall_s": round3(wall),
            "per_event_ms_p50": round3(p50), "per_event_ms_p99": round3(p99),
            "turn_ms_p50": round3(percentile(&turn_ms, 0.5)), "turn_ms_p99": round3(percentile(&turn_ms, 0.99)),
            "server_peak_rss_kb": server_rss_kb, "server_cpu_s": round3(server_cpu_s),
            "server_cpu_ms_per_event": round3(server_cpu_s * 1000.0 / events.max(1) as f64),
            "meets_latency_target": p50 < 1.0, "meets_memory_target": server_rss_kb < 100 * 1024,
            "ok": ok,
        });
        println!("RESULT {result}");
        ok
    });
    if !ok {
        std::process::exit(1);
    }
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime, fields 14 and 15 (12 and 13 after the name), in USER_HZ: 100 a second.
    (ticks(11) + ticks(12)) / 100.0
}

/// The peak resident memory of process `pid`, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
