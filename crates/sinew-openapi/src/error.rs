//! What can go wrong loading a document.

/// A document that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenApiError {
    /// Not JSON or YAML.
    #[error("cannot parse the document: {0}")]
    Parse(String),
    /// Parsed, but not an OpenAPI 3.0 or 3.1 document.
    #[error("not a usable OpenAPI document: {0}")]
    Invalid(String),
    /// The document could not be read: a file, or a URL that answered badly.
    #[error("cannot fetch the document: {0}")]
    Fetch(String),
    /// A `$ref` that cannot be followed.
    #[error("cannot follow `{reference}`: {why}")]
    Ref {
        /// The `$ref` as the document writes it (`#/components/schemas/Pet`).
        reference: String,
        /// Why it cannot be followed: not local, pointing at nothing, or referring to itself.
        why: String,
    },
}
