use serde_json::json;
use sinew_core::{AgentTool, CancellationToken, Content, ToolContext, ToolError};
use sinew_tools::{MAX_IMAGE_BYTES, MAX_LINE_CHARS, MAX_TEXT_BYTES, ReadFileTool, Workspace};

use crate::ctx;

fn setup() -> (tempfile::TempDir, ReadFileTool) {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("a.txt"), text).unwrap();
    let tool = ReadFileTool::new(Workspace::confined(dir.path()).unwrap());
    (dir, tool)
}

fn text(result: &sinew_core::ToolResult) -> String {
    sinew_core::join_text(&result.content, "")
}

#[tokio::test]
async fn text_comes_with_line_numbers_and_windows_say_what_is_left() {
    let (_dir, tool) = setup();
    let whole = tool.execute(json!({"path": "a.txt"}), ctx()).await.unwrap();
    let shown = text(&whole);
    assert!(shown.starts_with("a.txt (lines 1-30 of 30)\n     1\tline 1\n"), "{shown}");
    assert!(whole.details["path"].as_str().unwrap().ends_with("a.txt"), "REQ-137 details");

    let window = text(&tool.execute(json!({"path": "a.txt", "offset": 10, "limit": 3}), ctx()).await.unwrap());
    assert_eq!(
        window,
        "a.txt (lines 10-12 of 30)\n    10\tline 10\n    11\tline 11\n    12\tline 12\n[18 more lines: use offset=13 to continue]\n"
    );
    let past = text(&tool.execute(json!({"path": "a.txt", "offset": 99}), ctx()).await.unwrap());
    assert_eq!(past, "a.txt: 30 lines; nothing at line 99\n");
}

#[tokio::test]
async fn large_files_need_a_window_and_binary_files_are_refused() {
    let (dir, tool) = setup();
    let big = "x".repeat(100) + "\n";
    let lines = MAX_TEXT_BYTES as usize / big.len() + 10;
    std::fs::write(dir.path().join("big.log"), big.repeat(lines)).unwrap();
    let error = tool.execute(json!({"path": "big.log"}), ctx()).await.unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(m) if m.starts_with("File too large") && m.contains("offset/limit")),
        "{error:?}"
    );
    let window = text(&tool.execute(json!({"path": "big.log", "offset": 5, "limit": 2}), ctx()).await.unwrap());
    assert!(window.starts_with(&format!("big.log (lines 5-6 of {lines})")), "{window}");

    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    let error = tool.execute(json!({"path": "blob.bin"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("binary file")), "{error:?}");
}

#[tokio::test]
async fn a_window_is_bounded_however_large_the_lines_or_the_limit() {
    let (dir, tool) = setup();
    // A window as large as the whole file still returns at most MAX_TEXT_BYTES of text.
    let big = "y".repeat(1000) + "\n";
    let lines = 3 * MAX_TEXT_BYTES as usize / big.len();
    std::fs::write(dir.path().join("big.log"), big.repeat(lines)).unwrap();
    let window =
        text(&tool.execute(json!({"path": "big.log", "offset": 1, "limit": 1_000_000_000u64}), ctx()).await.unwrap());
    assert!(window.len() < MAX_TEXT_BYTES as usize + 4096, "{} bytes", window.len());
    let shown = window.lines().filter(|l| l.contains("\tyyy")).count();
    assert!(
        window.contains(&format!("more lines: use offset={} to continue", shown + 1)),
        "{}",
        &window[window.len() - 200..]
    );

    // One 20 MB line: cut, and the line after it still found.
    let mut file = "z".repeat(20 * 1024 * 1024);
    file.push_str("\nsecond line\n");
    std::fs::write(dir.path().join("one-line.txt"), file).unwrap();
    let window = text(&tool.execute(json!({"path": "one-line.txt", "offset": 1, "limit": 2}), ctx()).await.unwrap());
    assert!(window.starts_with("one-line.txt (lines 1-2 of 2)"), "{}", &window[..100]);
    assert!(window.contains(&format!("     1\t{} [line truncated]", "z".repeat(MAX_LINE_CHARS))));
    assert!(window.contains("     2\tsecond line"));
    assert!(window.len() < 3 * MAX_LINE_CHARS, "{} bytes", window.len());
}

#[tokio::test]
async fn images_come_back_as_base64_images() {
    let (dir, tool) = setup();
    let png = [0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    std::fs::write(dir.path().join("pic.PNG"), png).unwrap();
    let result = tool.execute(json!({"path": "pic.PNG"}), ctx()).await.unwrap();
    assert_eq!(result.content[1], Content::image("iVBORw0KGgo=", "image/png"));
}

/// REQ-098: an image over 20 MB is refused before it is read.
#[tokio::test]
async fn an_image_over_the_limit_is_refused_unread() {
    let (dir, tool) = setup();
    // A sparse terabyte: reading it first would take minutes and the memory of the machine, so
    // only a refusal from its size alone answers within the bound below.
    const TERABYTE: u64 = 1 << 40;
    std::fs::File::create(dir.path().join("huge.png")).unwrap().set_len(TERABYTE).unwrap();
    let call = tool.execute(json!({"path": "huge.png"}), ctx());
    let error = tokio::time::timeout(std::time::Duration::from_secs(10), call).await.unwrap().unwrap_err();
    let expected = format!("Image too large: huge.png is {TERABYTE} bytes, the limit is {MAX_IMAGE_BYTES}");
    assert!(matches!(&error, ToolError::Failed(f) if f.to_string() == expected), "{error:?}");
    std::fs::File::create(dir.path().join("limit.png")).unwrap().set_len(MAX_IMAGE_BYTES).unwrap();
    assert!(tool.execute(json!({"path": "limit.png"}), ctx()).await.is_ok(), "the limit itself is allowed");
}

#[tokio::test]
async fn cancellation_comes_before_any_file_access_and_escapes_are_refused() {
    let (_dir, tool) = setup();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cancelled = ToolContext::new("c", "read_file", cancel);
    // The file does not exist: a read would say so; cancellation is checked first.
    let error = tool.execute(json!({"path": "missing.txt"}), cancelled).await.unwrap_err();
    assert_eq!(error, ToolError::Cancelled);

    let error = tool.execute(json!({"path": "../etc/passwd"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("outside the workspace")), "{error:?}");
    let error = tool.execute(json!({"path": "missing.txt"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("cannot read missing.txt")), "{error:?}");
    std::fs::create_dir(_dir.path().join("sub")).unwrap();
    let error = tool.execute(json!({"path": "sub"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("is a directory")), "{error:?}");
    let error = tool.execute(json!({"offset": 1}), ctx()).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidArgs(_)));
}

#[tokio::test]
async fn a_failure_keeps_its_io_error_as_the_source() {
    let (_dir, tool) = setup();
    let error = tool.execute(json!({"path": "missing.txt"}), ctx()).await.unwrap_err();
    let ToolError::Failed(failure) = &error else { panic!("{error:?}") };
    assert!(failure.starts_with("cannot read missing.txt"), "{failure}");
    let io = std::error::Error::source(&error)
        .and_then(std::error::Error::source)
        .and_then(|cause| cause.downcast_ref::<std::io::Error>())
        .expect("the I/O error under the failure");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}
