use serde_json::json;
use sinew_core::{AgentTool, CancellationToken, ToolContext, ToolError};
use sinew_tools::{EditFileTool, Workspace};

use crate::ctx;

fn setup(content: &[u8]) -> (tempfile::TempDir, EditFileTool) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.rs"), content).unwrap();
    let tool = EditFileTool::new(Workspace::confined(dir.path()).unwrap());
    (dir, tool)
}

#[tokio::test]
async fn one_match_is_replaced_and_the_diff_reported() {
    let (dir, tool) = setup(b"fn main() {\n    println!(\"hi\");\n}\n");
    let result = tool
        .execute(json!({"path": "f.rs", "old_text": "println!(\"hi\");", "new_text": "println!(\"hello\");\n    println!(\"world\");"}), ctx())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "fn main() {\n    println!(\"hello\");\n    println!(\"world\");\n}\n"
    );
    assert_eq!((result.details["old_lines"].clone(), result.details["new_lines"].clone()), (json!(1), json!(2)));
    let diff = result.details["diff"].as_str().unwrap();
    assert!(diff.contains("-    println!(\"hi\");\n+    println!(\"hello\");\n+    println!(\"world\");\n"), "{diff}");
}

#[tokio::test]
async fn crlf_files_stay_crlf_whatever_the_model_sends() {
    let (dir, tool) = setup(b"one\r\ntwo\r\nthree\r\n");
    tool.execute(json!({"path": "f.rs", "old_text": "two\nthree", "new_text": "2\n3"}), ctx()).await.unwrap();
    assert_eq!(std::fs::read(dir.path().join("f.rs")).unwrap(), b"one\r\n2\r\n3\r\n");
}

#[tokio::test]
async fn mixed_line_endings_stay_as_they_were_line_by_line() {
    let check = |file: &'static [u8], old: &'static str, new: &'static str, expected: &'static [u8]| async move {
        let (dir, tool) = setup(file);
        tool.execute(json!({"path": "f.rs", "old_text": old, "new_text": new}), ctx()).await.unwrap();
        assert_eq!(
            String::from_utf8(std::fs::read(dir.path().join("f.rs")).unwrap()).unwrap(),
            String::from_utf8(expected.to_vec()).unwrap(),
            "{old:?} -> {new:?}"
        );
    };
    // Same number of lines: each keeps its ending.
    check(b"a\r\nb\nc\r\nd\n", "b\nc", "B\nC", b"a\r\nB\nC\r\nd\n").await;
    // A line added takes the ending of the line it replaces; the lines after keep theirs.
    check(b"a\nb\r\nc\nd\r\n", "b", "b1\nb2", b"a\nb1\r\nb2\r\nc\nd\r\n").await;
    // Lines removed: the rest keep theirs.
    check(b"a\r\nb\nc\r\nd\n", "b\nc\r\n", "", b"a\r\nd\n").await;
    // No final line break, and text the model sends with CRLF.
    check(b"a\nb\r\nc", "b\r\nc", "x\r\ny\r\nz", b"a\nx\r\ny\r\nz").await;
}

#[tokio::test]
async fn missing_and_ambiguous_text_are_explained() {
    let (dir, tool) = setup(b"let total = 1;\nlet total = 1;\nfn compute_sum() {}\n");
    let error =
        tool.execute(json!({"path": "f.rs", "old_text": "let total = 1;", "new_text": "x"}), ctx()).await.unwrap_err();
    assert_eq!(
        error,
        ToolError::Failed("old_text matches 2 locations in f.rs. Include more context to make it unique.".into())
    );
    let error = tool
        .execute(json!({"path": "f.rs", "old_text": "fn compute_summ() {}", "new_text": "x"}), ctx())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(m) if m.contains("old_text not found") && m.contains("Did you mean line 3: fn compute_sum() {}")),
        "{error:?}"
    );
    let error = tool.execute(json!({"path": "f.rs", "old_text": "zzz", "new_text": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if !m.contains("Did you mean")), "{error:?}");
    assert_eq!(
        std::fs::read(dir.path().join("f.rs")).unwrap(),
        b"let total = 1;\nlet total = 1;\nfn compute_sum() {}\n",
        "untouched"
    );
}

#[tokio::test]
async fn binary_files_cancellation_and_escapes() {
    let (dir, tool) = setup(b"\x00\x01binary");
    let error = tool.execute(json!({"path": "f.rs", "old_text": "binary", "new_text": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("binary file")), "{error:?}");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = tool
        .execute(
            json!({"path": "f.rs", "old_text": "binary", "new_text": "x"}),
            ToolContext::new("c", "edit_file", cancel),
        )
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    let error = tool.execute(json!({"path": "../f.rs", "old_text": "a", "new_text": "b"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("outside the workspace")));
    assert_eq!(std::fs::read(dir.path().join("f.rs")).unwrap(), b"\x00\x01binary");
}

#[tokio::test]
async fn non_utf8_files_and_empty_old_text_are_refused() {
    let (dir, tool) = setup(b"caf\xe9\n");
    let error = tool.execute(json!({"path": "f.rs", "old_text": "caf", "new_text": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("not UTF-8")), "{error:?}");
    let error = tool.execute(json!({"path": "f.rs", "old_text": "", "new_text": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidArgs(_)));
    assert_eq!(std::fs::read(dir.path().join("f.rs")).unwrap(), b"caf\xe9\n");
}
