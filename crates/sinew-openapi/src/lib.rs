//! OpenAPI documents as sinew agent tools: one tool per operation.
//!
//! - **Documents**: OpenAPI 3.0 and 3.1, in JSON or YAML ([`OpenApiDocument`]). Local `$ref`s
//!   (schemas, parameters, request bodies, path items) are followed; a recursive schema is cut
//!   where it meets itself again, and a reference that cannot be followed is reported, never
//!   looped on.
//! - **Tools** ([`OpenApiToolset`]): each operation's parameters (path-level ones included, the
//!   operation's own winning) and JSON or form request body become one JSON Schema for the
//!   model, with required fields, enums and descriptions. A parameter name used in two places
//!   becomes `{location}_{name}`; the body is the `body` argument.
//! - **Names**: the `operationId` (sanitized), or for an operation without one, its method and
//!   path: `GET /pet/{petId}` → `get_pet_by_petId` (see [`operations`]); with a name prefix,
//!   `{prefix}__{name}` ([`OpenApiToolset::name_prefix`], REQ-156).
//! - **Choice**: [`OperationFilter`] keeps operations by `operationId`, tag, method or path
//!   prefix (REQ-155).
//! - **Requests**: OpenAPI's parameter styles (`form` exploded or not, `spaceDelimited`,
//!   `pipeDelimited`, `deepObject`, `simple`, `label`, `matrix`); credentials for the document's
//!   security schemes (API key in a header, the query or a cookie; bearer; basic; OAuth tokens),
//!   never shown by `Debug`.
//! - **Responses**: the body as text, cut on a character boundary (64 KiB by default); a 4xx or
//!   5xx is an error result with the status, the body and a validator's `sl-violations`.

mod document;
mod error;
mod operation;
mod request;
mod tool;

pub use document::{MAX_DOCUMENT_BYTES, OpenApiDocument};
pub use error::OpenApiError;
pub use operation::{Location, Operation, OperationFilter, Parameter, RequestBody, operations};
pub use tool::{Credential, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, OpenApiTool, OpenApiToolset, truncate_utf8};
