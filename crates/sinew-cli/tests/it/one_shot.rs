//! One-shot runs against scripted Anthropic and OpenAI-compatible servers: tool calls, approvals
//! answered on stdin, `--json`, sessions saved by one process and resumed by another.

use serde_json::{Value, json};
use sinew_testing::wire::{WireTurn, anthropic_events, openai_chat_events, sse_response};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

use crate::support::{Sandbox, answers_tools, messages, text_of};

/// Anthropic: the model reads a file and writes one in the same turn; only the write asks.
fn anthropic_model(request: &ReceivedRequest) -> ServedResponse {
    let messages = messages(request);
    let last_prompt = messages.iter().rev().find(|m| m["role"] == "user" && !text_of(m).is_empty()).map(text_of);
    let turn = if answers_tools(&messages) {
        WireTurn::new().text("Wrote notes.txt.").usage(2_000, 20)
    } else if last_prompt.as_deref() == Some("what did you write?") {
        WireTurn::new().text("I wrote ").text("hello into notes.txt.").usage(2_500, 12)
    } else {
        WireTurn::new()
            .text("Writing it.")
            .tool_call("toolu_read", "read_file", json!({"path": "input.txt"}))
            .tool_call("toolu_write", "write_file", json!({"path": "notes.txt", "content": "hello"}))
            .usage(10_000, 1_000)
    };
    sse_response(anthropic_events(&turn), None)
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_one_shot_asks_before_writing_then_a_second_process_resumes_the_session() {
    let server = MockServer::start(anthropic_model).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &server.url())]);
    std::fs::write(sandbox.workspace.path().join("input.txt"), "some input\n").unwrap();

    let run = sandbox.run(&["write the notes"], "y\n").await;
    run.assert_code(0);
    assert_eq!(sandbox.file("notes.txt").as_deref(), Some("hello"));
    assert_eq!(run.stdout, "Writing it.\nWrote notes.txt.\n", "only the answer goes to stdout");
    let stderr = &run.stderr;
    assert_eq!(stderr.matches("allow ").count(), 1, "read_file runs without asking:\n{stderr}");
    assert!(
        stderr.contains(r#"allow write_file(content="hello", path="notes.txt")? [y]es / [n]o / [a]lways"#),
        "{stderr}"
    );
    assert!(stderr.contains(r#"● read_file(path="input.txt")"#) && stderr.contains("⎿ read_file: "), "{stderr}");
    assert!(stderr.contains("⎿ write_file: "), "{stderr}");
    // claude-sonnet-4-5: $3 in and $15 out per million tokens.
    assert!(stderr.contains("↳ 10,000 in · 1,000 out · $0.0450"), "usage and cost per turn:\n{stderr}");
    let first = &server.requests()[0];
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert_eq!(first.json()["model"], "claude-sonnet-4-5", "the provider name is not sent");
    assert!(sandbox.database().exists(), "the session is saved in the user's data directory");

    let id = run.session_id();
    let resumed = sandbox.run(&["--resume", &id[..8], "what did you write?"], "").await;
    resumed.assert_code(0);
    assert_eq!(resumed.stdout, "I wrote hello into notes.txt.\n");
    assert_eq!(resumed.session_id(), id, "the conversation goes on in the same session");
    let requests = server.requests();
    let history = messages(requests.last().unwrap());
    assert_eq!(history.len(), 5, "prompt, tool calls, results, answer, new prompt: {history:#?}");
    assert_eq!(text_of(&history[0]), "write the notes");
    let calls: Vec<&str> = history[1]["content"].as_array().unwrap().iter().filter_map(|b| b["id"].as_str()).collect();
    assert_eq!(calls, ["toolu_read", "toolu_write"]);
    let results = history[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results[0]["content"].to_string().contains("some input"), "{results:?}");
    assert_eq!(text_of(&history[3]), "Wrote notes.txt.");
    assert_eq!(text_of(&history[4]), "what did you write?");

    // `--continue` takes the most recent session: the same one.
    let continued = sandbox.run(&["-c", "what did you write?"], "").await;
    continued.assert_code(0);
    assert_eq!(continued.session_id(), id);
    assert_eq!(messages(server.requests().last().unwrap()).len(), 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_call_does_not_run_and_the_model_is_told() {
    let server = MockServer::start(anthropic_model).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &server.url())]);
    std::fs::write(sandbox.workspace.path().join("input.txt"), "x").unwrap();
    let run = sandbox.run(&["write the notes"], "maybe\nn\n").await;
    run.assert_code(0);
    assert!(run.stderr.contains("answer y, n or a"), "an unclear answer is asked again:\n{}", run.stderr);
    assert_eq!(sandbox.file("notes.txt"), None);
    let results = &messages(server.requests().last().unwrap())[2]["content"];
    let declined = results.as_array().unwrap().iter().find(|r| r["tool_use_id"] == "toolu_write").unwrap();
    assert_eq!(declined["is_error"], true);
    assert!(declined["content"].to_string().contains("The user declined this tool call."), "{declined}");
}

#[tokio::test(flavor = "multi_thread")]
async fn closed_input_declines_and_yolo_never_asks() {
    let server = MockServer::start(anthropic_model).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &server.url())]);
    let run = sandbox.run(&["--no-save", "write the notes"], "").await;
    run.assert_code(0);
    assert!(run.stderr.contains("no answer (input closed): declined"), "{}", run.stderr);
    assert_eq!(sandbox.file("notes.txt"), None);
    assert!(!sandbox.database().exists(), "--no-save saves nothing");

    let run = sandbox.run(&["--yolo", "write the notes"], "").await;
    run.assert_code(0);
    assert!(!run.stderr.contains("allow "), "{}", run.stderr);
    assert_eq!(sandbox.file("notes.txt").as_deref(), Some("hello"));
}

/// OpenAI-compatible: `bash` twice, one tool call per turn, then the answer.
fn openai_model(request: &ReceivedRequest) -> ServedResponse {
    let messages = messages(request);
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let turn = match results {
        0 => WireTurn::new().tool_call("call_1", "bash", json!({"command": "echo first"})),
        1 => WireTurn::new().tool_call("call_2", "bash", json!({"command": "echo second"})),
        _ => WireTurn::new().text("Both ").text("ran.").usage(300, 3),
    };
    sse_response(openai_chat_events(&turn), None)
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_compatible_json_lines_with_always_approving_bash() {
    let server = MockServer::start(openai_model).await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    let run = sandbox.run(&["--json", "--model", "local-model", "run two commands"], "a\n").await;
    run.assert_code(0);
    assert_eq!(run.stderr.matches("allow bash(").count(), 1, "always: asked once\n{}", run.stderr);

    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"agentStart"));
    assert_eq!(events.first().unwrap()["model"], "openai/local-model");
    // One run suspends for the approval, the resumed run finishes.
    let ends: Vec<&str> =
        events.iter().filter(|e| e["type"] == "agentEnd").map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(ends, ["suspended", "completed"]);
    assert_eq!(types.last(), Some(&"agentEnd"));
    assert_eq!(types.iter().filter(|t| **t == "toolApprovalRequest").count(), 1);
    let outputs: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "toolExecutionEnd")
        .map(|e| {
            assert_eq!(e["isError"], false, "{e}");
            e["result"]["content"][0]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(outputs[0].contains("first") && outputs[1].contains("second"), "{outputs:?}");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "messageUpdate" && e["delta"]["type"] == "text")
        .map(|e| e["delta"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Both ran.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].json()["model"], "local-model");
    assert_eq!(requests[0].header("authorization"), None, "a local server needs no key");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_model_exits_1_and_says_why() {
    let server = MockServer::start(|_: &ReceivedRequest| {
        ServedResponse::json(
            401,
            &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        )
    })
    .await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-wrong"), ("ANTHROPIC_BASE_URL", &server.url())]);
    let run = sandbox.run(&["hi"], "").await;
    run.assert_code(1);
    assert!(run.stderr.contains("error: ") && run.stderr.contains("invalid x-api-key"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn setup_mistakes_exit_2_with_what_to_change() {
    let sandbox = Sandbox::new(&[]);
    let run = sandbox.run(&["hi"], "").await;
    run.assert_code(2);
    for variable in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "AZURE_OPENAI_API_KEY",
        "AWS_REGION",
        "sinew --demo",
    ] {
        assert!(run.stderr.contains(variable), "{variable} missing from\n{}", run.stderr);
    }

    let config = sandbox.home.path().join(".config/sinew/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[providers.anthropic]\napi_kee = \"x\"\n").unwrap();
    let run = sandbox.run(&["hi"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("invalid configuration in") && run.stderr.contains("api_kee"), "{}", run.stderr);

    std::fs::write(&config, "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n").unwrap();
    let run = sandbox.run(&["hi"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("provider `local` has no default model"), "{}", run.stderr);

    let run = sandbox.run(&["--json"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("--json needs a PROMPT"), "{}", run.stderr);
    let run = sandbox.run(&["--resume", "nope", "hi", "--model", "m"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("no saved session `nope`"), "{}", run.stderr);
    let run = sandbox.run(&["-c", "hi", "--model", "m"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("there is no saved session to continue"), "{}", run.stderr);
    let run = sandbox.run(&["--no-save", "--resume", "x", "hi", "--model", "m"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("sessions are not saved (--no-save)"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_providers_are_reached_by_name_and_base_urls_overridden() {
    let server = MockServer::start(anthropic_model).await;
    let sandbox = Sandbox::new(&[("WORK_KEY", "sk-work"), ("ANTHROPIC_API_KEY", "sk-env")]);
    let config = sandbox.home.path().join(".config/sinew/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let toml = format!(
        "model = \"work/claude-haiku-4-5\"\n[providers.work]\nkind = \"anthropic\"\napi_key_env = \"WORK_KEY\"\nbase_url = \"{}\"\n",
        server.url()
    );
    std::fs::write(&config, toml).unwrap();
    let run = sandbox.run(&["--yolo", "write the notes"], "").await;
    run.assert_code(0);
    let first = &server.requests()[0];
    assert_eq!(first.header("x-api-key"), Some("sk-work"), "the table's key variable, not ANTHROPIC_API_KEY");
    assert_eq!(first.json()["model"], "claude-haiku-4-5");

    // The environment's provider, sent elsewhere by --base-url.
    std::fs::remove_file(&config).unwrap();
    let other = MockServer::start(anthropic_model).await;
    let run = sandbox.run(&["--yolo", "-p", "anthropic", "--base-url", &other.url(), "write the notes"], "").await;
    run.assert_code(0);
    assert_eq!(other.requests()[0].header("x-api-key"), Some("sk-env"));
    assert_eq!(other.requests()[0].json()["model"], "claude-sonnet-4-5", "the kind's default model");
    assert_eq!(server.requests().len(), 2, "the first server saw only the first run");
}

#[tokio::test(flavor = "multi_thread")]
async fn overloaded_servers_are_retried_and_the_retry_is_shown() {
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let server = MockServer::start(move |request: &ReceivedRequest| {
        if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 3 {
            return ServedResponse::json(
                529,
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            )
            .header("retry-after-ms", "1");
        }
        anthropic_model(request)
    })
    .await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &server.url())]);
    let run = sandbox.run(&["--yolo", "write the notes"], "").await;
    run.assert_code(0);
    assert!(run.stderr.contains("retrying in ") && run.stderr.contains("Overloaded"), "{}", run.stderr);
    assert_eq!(run.stdout, "Writing it.\nWrote notes.txt.\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_runs_offline_and_says_it_is_scripted() {
    let sandbox = Sandbox::new(&[]);
    let run = sandbox.run(&["--demo"], "y\ny\n").await;
    run.assert_code(0);
    assert!(run.stderr.contains("SCRIPTED") && run.stderr.contains("MockProvider"), "{}", run.stderr);
    assert!(run.stderr.contains("▸ thought for"), "thinking is collapsed to one line:\n{}", run.stderr);
    assert!(run.stderr.contains("⎿ bash: exit 0 · Hello from sinew!"), "{}", run.stderr);
    assert!(run.stdout.contains("Done: hello.txt says \"Hello from sinew!\"."), "{}", run.stdout);
    assert!(!sandbox.database().exists(), "the demo saves nothing");

    let run = sandbox.run(&["--demo", "--yolo", "--show-thinking"], "").await;
    run.assert_code(0);
    assert!(run.stderr.contains("thinking: The user wants a file with a greeting."), "{}", run.stderr);
    assert!(!run.stderr.contains("▸ thought for") && !run.stderr.contains("allow "), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn sessions_saved_in_postgres_are_resumed_by_another_process() {
    let url = std::env::var("SINEW_TEST_POSTGRES_URL").expect("SINEW_TEST_POSTGRES_URL names a PostgreSQL server");
    let server = MockServer::start(anthropic_model).await;
    let sandbox = Sandbox::new(&[
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("ANTHROPIC_BASE_URL", &server.url()),
        ("SINEW_SESSION_STORE", &url),
    ]);
    let run = sandbox.run(&["write the notes"], "y\n").await;
    run.assert_code(0);
    let id = run.session_id();
    let resumed = sandbox.run(&["--resume", &id, "what did you write?"], "").await;
    resumed.assert_code(0);
    assert_eq!(resumed.stdout, "I wrote hello into notes.txt.\n");
    assert_eq!(messages(server.requests().last().unwrap()).len(), 5, "the whole conversation came back");
    assert!(!sandbox.database().exists(), "nothing went to SQLite");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_session_store_is_named_in_the_error() {
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test")]);
    let run = sandbox.run(&["--session-store", "postgres://me:secret@127.0.0.1:1/sinew", "hi"], "").await;
    run.assert_code(1);
    assert!(run.stderr.contains("cannot open the session store postgres://…@127.0.0.1:1/sinew"), "{}", run.stderr);
    assert!(!run.stderr.contains("secret"), "the password is not shown:\n{}", run.stderr);
}

/// `--json-schema`: an answer that does not fit goes back to the model; only the one that fits
/// reaches stdout.
#[tokio::test(flavor = "multi_thread")]
async fn json_schema_asks_for_structured_output_and_prints_only_the_checked_answer() {
    let server = MockServer::start(|request: &ReceivedRequest| {
        let turn = match messages(request).iter().filter(|m| m["role"] == "user").count() {
            1 => WireTurn::new().text("{\"city\": \"Paris\", \"population\": \"many\"}"),
            _ => WireTurn::new().text("{\"city\": \"Paris\", ").text("\"population\": 2100000}"),
        };
        sse_response(openai_chat_events(&turn), None)
    })
    .await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    });
    let file = sandbox.workspace.path().join("city.schema.json");
    std::fs::write(&file, schema.to_string()).unwrap();

    let run = sandbox.run(&["--json-schema", file.to_str().unwrap(), "--model", "m", "Largest French city?"], "").await;
    run.assert_code(0);
    assert_eq!(run.stdout, "{\"city\":\"Paris\",\"population\":2100000}\n", "stderr:\n{}", run.stderr);
    assert!(
        run.stderr.contains(
            "the answer is not valid: it does not fit the schema: at /population: \"many\" is not of type \"integer\""
        ),
        "{}",
        run.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].json()["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "city", "strict": true, "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["city", "population"],
            "additionalProperties": false,
        }}})
    );
    let correction = text_of(messages(&requests[1]).last().unwrap());
    assert!(
        correction.starts_with("That answer is not valid: it does not fit the schema: at /population"),
        "{correction}"
    );

    // A schema that cannot be used is a usage error, before any request.
    std::fs::write(&file, "{\"type\": 5}").unwrap();
    let broken = sandbox.run(&["--json-schema", file.to_str().unwrap(), "--model", "m", "q"], "").await;
    broken.assert_code(2);
    assert!(broken.stderr.contains("city.schema.json: invalid JSON Schema: "), "{}", broken.stderr);
    std::fs::write(&file, r#"{"type": "array"}"#).unwrap();
    let array = sandbox.run(&["--json-schema", file.to_str().unwrap(), "--model", "m", "q"], "").await;
    array.assert_code(2);
    assert!(array.stderr.contains("its root must be an object"), "{}", array.stderr);
    let missing = sandbox.run(&["--json-schema", "/nonexistent.json", "--model", "m", "q"], "").await;
    missing.assert_code(2);
    assert!(missing.stderr.contains("cannot read the schema /nonexistent.json"), "{}", missing.stderr);
    let no_prompt = sandbox.run(&["--json-schema", file.to_str().unwrap()], "").await;
    no_prompt.assert_code(2);
    assert_eq!(server.requests().len(), 2);
}

/// `--json-schema` when no answer fits: exit 1, nothing on stdout, the last problem on stderr.
#[tokio::test(flavor = "multi_thread")]
async fn json_schema_gives_up_after_three_answers_that_do_not_fit() {
    let server = MockServer::start(|_: &ReceivedRequest| {
        sse_response(openai_chat_events(&WireTurn::new().text("not JSON at all")), None)
    })
    .await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    let file = sandbox.workspace.path().join("answer.json");
    std::fs::write(&file, r#"{"type": "object"}"#).unwrap();
    let run = sandbox.run(&["--json-schema", file.to_str().unwrap(), "--model", "m", "q"], "").await;
    run.assert_code(1);
    assert_eq!(run.stdout, "", "nothing unchecked reaches stdout");
    assert!(run.stderr.contains("not JSON at all"), "the answers stream to stderr:\n{}", run.stderr);
    assert!(
        run.stderr.contains("error: no answer fits the schema after 3 attempts: it is not JSON (expected ident"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn otel_exporter_otlp_endpoint_sends_the_runs_spans_and_metrics_to_the_collector() {
    let server = MockServer::start(|_: &ReceivedRequest| {
        sse_response(anthropic_events(&WireTurn::new().text("Hi.").usage(30, 2)), None)
    })
    .await;
    let collector = MockServer::start(|_: &ReceivedRequest| ServedResponse::new(200)).await;
    let sandbox = Sandbox::new(&[
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("ANTHROPIC_BASE_URL", &server.url()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_SERVICE_NAME", "sinew-cli-test"),
    ]);
    let run = sandbox.run(&["say hi"], "").await;
    run.assert_code(0);
    assert_eq!(run.stdout, "Hi.\n");

    let requests = collector.requests();
    let body = |path: &str| -> Value {
        let request =
            requests.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("nothing at {path}: {requests:?}"));
        assert_eq!(request.header("content-type"), Some("application/json"));
        serde_json::from_slice(&request.body).unwrap()
    };
    let traces = body("/v1/traces").to_string();
    for expected in ["sinew-cli-test", "invoke_agent", r#""gen_ai.operation.name""#, r#""stringValue":"chat""#] {
        assert!(traces.contains(expected), "{expected} in {traces}");
    }
    let metrics = body("/v1/metrics").to_string();
    for expected in ["gen_ai.client.operation.duration", "gen_ai.client.token.usage", r#""gen_ai.token.type""#] {
        assert!(metrics.contains(expected), "{expected} in {metrics}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_otlp_protocol_sinew_cannot_speak_is_a_usage_error() {
    let sandbox =
        Sandbox::new(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
    let run = sandbox.run(&["say hi"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"), "{}", run.stderr);
}
