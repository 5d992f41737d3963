mod history;
mod serde_shapes;
