//! Walking a tree the way ripgrep does (`.gitignore` and friends honoured), in-process, with
//! a deadline and cancellation. Shared by `list_files` and `search`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use globset::{Glob, GlobMatcher};
use sinew_core::{CancellationToken, ToolError};

/// Directories never listed or searched, ignored or not.
pub(crate) const ALWAYS_SKIPPED: &[&str] = &[".git", "target", "node_modules"];

/// A glob on file names (`*.rs`), or on relative paths when it contains `/` (`src/**/*.rs`).
pub(crate) struct NameFilter {
    matcher: GlobMatcher,
    on_path: bool,
}

impl NameFilter {
    pub(crate) fn new(pattern: &str) -> Result<Self, ToolError> {
        let glob = Glob::new(pattern).map_err(|e| ToolError::InvalidArgs(format!("invalid glob `{pattern}`: {e}")))?;
        Ok(NameFilter { matcher: glob.compile_matcher(), on_path: pattern.contains('/') })
    }

    pub(crate) fn matches(&self, relative: &Path) -> bool {
        if self.on_path {
            self.matcher.is_match(relative)
        } else {
            relative.file_name().is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

/// Calls `visit` with each file under `root` (relative path, absolute path) until it returns
/// `false`. Fails on cancellation or when `deadline` passes.
pub(crate) fn walk_files(
    root: &Path,
    max_depth: Option<usize>,
    cancel: &CancellationToken,
    deadline: Duration,
    mut visit: impl FnMut(&Path, &Path) -> bool,
) -> Result<(), ToolError> {
    let started = Instant::now();
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(max_depth)
        .require_git(false)
        // Dotfiles matter in a codebase (.github, .cargo, .env.example); .git is skipped below.
        .hidden(false)
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && entry.file_name().to_str().is_some_and(|name| ALWAYS_SKIPPED.contains(&name)))
        })
        .sort_by_file_path(Path::cmp)
        .build();
    for entry in walker {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if started.elapsed() > deadline {
            return Err(ToolError::Failed(
                format!("gave up after {}s: the tree is too large", deadline.as_secs()).into(),
            ));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path: PathBuf = entry.into_path();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        if !visit(&relative, &path) {
            break;
        }
    }
    Ok(())
}
