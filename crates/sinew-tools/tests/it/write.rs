use serde_json::json;
use sinew_core::{AgentTool, CancellationToken, ToolContext, ToolError};
use sinew_tools::{Workspace, WriteFileTool};

use crate::ctx;

#[tokio::test]
async fn writes_create_parents_replace_atomically_and_keep_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteFileTool::new(Workspace::confined(dir.path()).unwrap());
    let result = tool.execute(json!({"path": "deep/er/new.txt", "content": "hello"}), ctx()).await.unwrap();
    assert_eq!(sinew_core::join_text(&result.content, ""), "Created deep/er/new.txt (5 bytes)");
    assert_eq!(std::fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(), "hello");
    assert!(result.details["path"].as_str().unwrap().ends_with("new.txt"));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let result = tool.execute(json!({"path": "run.sh", "content": "#!/bin/sh\n"}), ctx()).await.unwrap();
        assert!(sinew_core::join_text(&result.content, "").starts_with("Overwrote"));
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755, "mode kept");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left behind");
    assert!(!tool.requires_approval(&json!({})));
    assert!(tool.clone().requiring_approval().requires_approval(&json!({})), "approval is opt-in");
}

#[tokio::test]
async fn cancellation_prevents_the_write_and_escapes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteFileTool::new(Workspace::confined(dir.path()).unwrap());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = tool
        .execute(json!({"path": "x.txt", "content": "x"}), ToolContext::new("c", "write_file", cancel))
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(!dir.path().join("x.txt").exists(), "REQ-104: nothing written");
    let error = tool.execute(json!({"path": "../x.txt", "content": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("outside the workspace")));
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let error = tool.execute(json!({"path": "sub", "content": "x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.contains("is a directory")), "{error:?}");
    let error = tool.execute(json!({"path": "x.txt"}), ctx()).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidArgs(_)));
}
