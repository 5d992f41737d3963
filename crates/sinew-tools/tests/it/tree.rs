//! list_files and search on real trees.

use serde_json::json;
use sinew_core::{AgentTool, CancellationToken, ToolContext, ToolError};
use sinew_tools::{ListFilesTool, SearchTool, Workspace};

use crate::ctx;

/// 500 source files in 10 directories, plus ignored and skipped files that must never show.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in 0..10 {
        std::fs::create_dir_all(root.join(format!("src/m{d}"))).unwrap();
        for f in 0..50 {
            std::fs::write(
                root.join(format!("src/m{d}/f{f:02}.rs")),
                format!("fn f{d}_{f}() {{ let Needle = {f}; }}\n"),
            )
            .unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "generated/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("generated")).unwrap();
    std::fs::write(root.join("generated/out.rs"), "needle in generated").unwrap();
    std::fs::write(root.join("debug.log"), "needle in log").unwrap();
    for skipped in ["target", "node_modules", ".git"] {
        std::fs::create_dir_all(root.join(skipped)).unwrap();
        std::fs::write(root.join(skipped).join("x.rs"), "needle skipped").unwrap();
    }
    std::fs::write(root.join("README.md"), "A needle here.\nnothing\nNEEDLE loud\n").unwrap();
    std::fs::write(root.join("blob.bin"), b"needle\x00\x01").unwrap();
    dir
}

fn text(result: &sinew_core::ToolResult) -> String {
    sinew_core::join_text(&result.content, "")
}

#[tokio::test]
async fn listing_500_files_honours_gitignore_and_truncates_at_200() {
    let dir = tree();
    let tool = ListFilesTool::new(Workspace::confined(dir.path()).unwrap());
    let result = tool.execute(json!({}), ctx()).await.unwrap();
    let shown = text(&result);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 201, "200 files and the suffix");
    assert_eq!(lines[200], "... (truncated: showing 200 of 503 files; narrow with pattern or path)");
    assert_eq!(
        result.details,
        json!({"total": 503, "truncated": true}),
        "500 sources, .gitignore, README.md, blob.bin"
    );
    let all = text(
        &ListFilesTool::new(Workspace::confined(dir.path()).unwrap())
            .with_max_results(1000)
            .execute(json!({}), ctx())
            .await
            .unwrap(),
    );
    for hidden in ["generated", "debug.log", "target", "node_modules", ".git/"] {
        assert!(!all.contains(hidden), "{hidden} must not be listed");
    }
}

#[tokio::test]
async fn listing_filters_by_glob_and_depth() {
    let dir = tree();
    let tool = ListFilesTool::new(Workspace::confined(dir.path()).unwrap());
    let md = text(&tool.execute(json!({"pattern": "*.md"}), ctx()).await.unwrap());
    assert_eq!(md, "README.md");
    let m3 = tool.execute(json!({"path": "src/m3", "pattern": "f0?.rs"}), ctx()).await.unwrap();
    assert_eq!(m3.details, json!({"total": 10, "truncated": false}));
    let paths = text(&tool.execute(json!({"pattern": "src/m1/*.rs"}), ctx()).await.unwrap());
    assert_eq!(paths.lines().count(), 50);
    let top = text(&tool.execute(json!({"max_depth": 1}), ctx()).await.unwrap());
    assert_eq!(top, ".gitignore\nREADME.md\nblob.bin");
    assert!(matches!(tool.execute(json!({"pattern": "["}), ctx()).await, Err(ToolError::InvalidArgs(_))));
    assert!(matches!(tool.execute(json!({"path": "../.."}), ctx()).await, Err(ToolError::Failed(_))));
    let error = tool.execute(json!({"path": "README.md"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("not a directory")), "{error:?}");
}

#[tokio::test]
async fn search_finds_lines_in_process_honouring_gitignore_and_skipping_binaries() {
    let dir = tree();
    let tool = SearchTool::new(Workspace::confined(dir.path()).unwrap());
    let result =
        tool.execute(json!({"pattern": "needle", "case_sensitive": false, "include": "*.md"}), ctx()).await.unwrap();
    assert_eq!(text(&result), "README.md:1:A needle here.\nREADME.md:3:NEEDLE loud");
    let exact = text(&tool.execute(json!({"pattern": "needle"}), ctx()).await.unwrap());
    assert_eq!(
        exact, "README.md:1:A needle here.",
        "case-sensitive by default; ignored, skipped and binary files never searched"
    );
    let many = tool.execute(json!({"pattern": r"let Needle = \d+"}), ctx()).await.unwrap();
    assert_eq!(many.details, json!({"total": 500, "truncated": true}));
    assert!(text(&many).ends_with("... (truncated: showing 100 of 500 matches)"));
    let one_file = text(&tool.execute(json!({"pattern": "loud", "path": "README.md"}), ctx()).await.unwrap());
    assert_eq!(one_file, "README.md:3:NEEDLE loud");
    assert_eq!(text(&tool.execute(json!({"pattern": "absent"}), ctx()).await.unwrap()), "No matches for `absent`");
    assert!(matches!(tool.execute(json!({"pattern": "("}), ctx()).await, Err(ToolError::InvalidArgs(_))));
}

#[tokio::test]
async fn search_and_list_respect_cancellation() {
    let dir = tree();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let search = SearchTool::new(Workspace::confined(dir.path()).unwrap());
    let error =
        search.execute(json!({"pattern": "x"}), ToolContext::new("c", "search", cancel.clone())).await.unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    let list = ListFilesTool::new(Workspace::confined(dir.path()).unwrap());
    assert_eq!(
        list.execute(json!({}), ToolContext::new("c", "list_files", cancel)).await.unwrap_err(),
        ToolError::Cancelled
    );
}

/// REQ-105: a walk that outlives its deadline fails instead of hanging the turn.
#[tokio::test]
async fn a_walk_past_its_deadline_fails() {
    let dir = tree();
    let tool = ListFilesTool::new(Workspace::confined(dir.path()).unwrap()).with_timeout(std::time::Duration::ZERO);
    let error = tool.execute(json!({}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(f) if f.to_string().contains("the tree is too large")), "{error:?}");
}
