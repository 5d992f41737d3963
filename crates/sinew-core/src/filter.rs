//! Input filters: checks on user input before it reaches a model.

/// The verdict of an [`InputFilter`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterResult {
    /// Let the input through unchanged.
    Pass,
    /// Let the input through with a warning appended to it for the model.
    Warn(String),
    /// Refuse the input; the run ends before any model call.
    Reject(String),
}

/// Inspects the text of the user messages of a prompt.
pub trait InputFilter: Send + Sync {
    /// Judges `text`: the text blocks of the prompt's user messages, joined by newlines.
    fn filter(&self, text: &str) -> FilterResult;
}

impl<F: Fn(&str) -> FilterResult + Send + Sync> InputFilter for F {
    fn filter(&self, text: &str) -> FilterResult {
        self(text)
    }
}
