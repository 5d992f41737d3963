//! Where file tools may reach: paths resolved against a root, with escapes refused.

use std::path::{Component, Path, PathBuf};

use sinew_core::ToolError;

/// The directory file tools work in.
///
/// Relative paths resolve against the root. A confined workspace also refuses any path that
/// leaves the root: `..`, an absolute path elsewhere, or a symbolic link (anywhere along the
/// path) pointing outside.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    confined: bool,
}

impl Workspace {
    /// Relative paths resolve against `root`; any path is allowed.
    pub fn unrestricted(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into(), confined: false }
    }

    /// Paths must stay inside `root` (which must exist).
    pub fn confined(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Workspace { root: std::fs::canonicalize(root)?, confined: true })
    }

    /// The process's current directory, unrestricted.
    pub fn current_dir() -> std::io::Result<Self> {
        Ok(Workspace::unrestricted(std::env::current_dir()?))
    }

    /// The directory relative paths resolve against; canonical when confined.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether paths outside the root are refused.
    pub fn is_confined(&self) -> bool {
        self.confined
    }

    /// [`Workspace::resolve`] on tokio's blocking pool: checking symbolic links is file-system
    /// work, which the tools keep off the async runtime.
    pub async fn resolve_async(&self, path: &str) -> Result<PathBuf, ToolError> {
        if !self.confined {
            // Lexical only: no file-system call to move off the runtime.
            return self.resolve(path);
        }
        let (workspace, path) = (self.clone(), path.to_owned());
        tokio::task::spawn_blocking(move || workspace.resolve(&path)).await.map_err(|e| {
            ToolError::Failed(sinew_core::Failure::with_source(format!("resolving the path failed: {e}"), e))
        })?
    }

    /// The absolute path `path` names, or why it may not be used.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(ToolError::InvalidArgs("`path` must not be empty".into()));
        }
        let joined = self.root.join(path);
        let normal = normalize(&joined);
        if !self.confined {
            return Ok(normal);
        }
        let outside = || ToolError::Failed(format!("{path} is outside the workspace {}", self.root.display()).into());
        if !normal.starts_with(&self.root) {
            return Err(outside());
        }
        // Symbolic links: the deepest part of the path that exists must really be inside.
        let mut existing = normal.as_path();
        loop {
            if let Ok(real) = std::fs::canonicalize(existing) {
                if !real.starts_with(&self.root) {
                    return Err(outside());
                }
                break;
            }
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        Ok(normal)
    }
}

/// `path` with `.` and `..` applied lexically (`..` at the root stays at the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_and_inside_paths_resolve() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let workspace = Workspace::confined(dir.path()).unwrap();
        let root = workspace.root().to_path_buf();
        assert_eq!(workspace.resolve("src/main.rs").unwrap(), root.join("src/main.rs"));
        assert_eq!(workspace.resolve("src/../new.txt").unwrap(), root.join("new.txt"));
        assert_eq!(workspace.resolve(root.join("src").to_str().unwrap()).unwrap(), root.join("src"));
        for escape in ["../outside.txt", "src/../../outside.txt", "/etc/passwd"] {
            let error = workspace.resolve(escape).unwrap_err();
            assert!(
                matches!(&error, ToolError::Failed(m) if m.contains("outside the workspace")),
                "{escape}: {error:?}"
            );
        }
        assert!(matches!(workspace.resolve(" "), Err(ToolError::InvalidArgs(_))));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_that_leave_the_root_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("file-link")).unwrap();
        let workspace = Workspace::confined(dir.path()).unwrap();
        for escape in ["link/secret.txt", "file-link", "link/new-file.txt"] {
            assert!(workspace.resolve(escape).is_err(), "{escape}");
        }
        assert!(Workspace::unrestricted(dir.path()).resolve("link/secret.txt").is_ok());
    }
}
