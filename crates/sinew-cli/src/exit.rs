//! How the process ends: the exit statuses and the errors that choose them.

use std::process::ExitCode;

/// The command line or configuration cannot work as given: exit status 2, with what to change.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A run ended early: exit status 130 after Ctrl-C, 1 after a failure.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

pub(crate) const FAILURE: u8 = 1;
pub(crate) const USAGE: u8 = 2;
pub(crate) const INTERRUPTED: u8 = 130;

/// The exit status for an error.
pub(crate) fn status_of(error: &anyhow::Error) -> ExitCode {
    if error.downcast_ref::<UsageError>().is_some() {
        ExitCode::from(USAGE)
    } else if error.downcast_ref::<Interrupted>().is_some() {
        ExitCode::from(INTERRUPTED)
    } else {
        ExitCode::from(FAILURE)
    }
}
