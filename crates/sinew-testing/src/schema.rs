//! A sample of the Rust shapes typed tools and extractors derive schemas from: a nested struct, an
//! enum, an `Option` and a `Vec`, for schema snapshots across the providers' dialects.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An order: the sample's root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// The order's number.
    pub id: u64,
    /// Who ordered.
    pub customer: Customer,
    /// Where the order stands.
    pub status: Status,
    /// A note for the courier, if any.
    pub note: Option<String>,
    /// What was ordered.
    pub lines: Vec<Line>,
}

/// A customer (a nested struct).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Customer {
    /// The customer's name.
    pub name: String,
    /// An email address, when given.
    pub email: Option<String>,
}

/// An order's state (a unit-variant enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not yet paid.
    Open,
    /// Paid and on its way.
    Shipped,
}

/// One line of an order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Line {
    /// The product's code.
    pub sku: String,
    /// How many.
    pub quantity: u32,
}

/// The JSON Schema of [`Order`], as `schemars` derives it.
pub fn order_schema() -> Value {
    schemars::schema_for!(Order).to_value()
}

/// An [`Order`] that fits [`order_schema`], as a model would answer it.
pub fn sample_order() -> Value {
    serde_json::json!({
        "id": 7,
        "customer": {"name": "Ada", "email": null},
        "status": "shipped",
        "note": null,
        "lines": [{"sku": "A-1", "quantity": 2}],
    })
}
