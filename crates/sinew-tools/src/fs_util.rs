//! Writing files so that a crash never leaves half a file: a temporary file beside the target,
//! flushed, given the target's permissions, then renamed over it.

use std::path::Path;

use sinew_core::ToolError;
use tokio::io::AsyncWriteExt;

/// Writes `bytes` to `path` atomically, creating parent directories and keeping the mode of a
/// file it replaces.
pub(crate) async fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    let shown = path.display();
    let parent = path.parent().ok_or_else(|| ToolError::Failed(format!("{shown} has no parent directory").into()))?;
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| ToolError::Failed(format!("cannot create {}: {e}", parent.display()).into()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let suffix: String = std::iter::repeat_with(fastrand::alphanumeric).take(8).collect();
    let temp = parent.join(format!(".{name}.sinew-{suffix}.tmp"));
    let result = async {
        let mut file = tokio::fs::File::create(&temp).await?;
        file.write_all(bytes).await?;
        file.sync_all().await?;
        if let Ok(metadata) = tokio::fs::metadata(path).await {
            tokio::fs::set_permissions(&temp, metadata.permissions()).await?;
        }
        tokio::fs::rename(&temp, path).await
    }
    .await;
    if let Err(error) = result {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(ToolError::Failed(sinew_core::Failure::with_source(
            format!("cannot write {shown}: {error}"),
            error,
        )));
    }
    Ok(())
}
