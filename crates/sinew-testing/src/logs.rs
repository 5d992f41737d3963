//! What code under test logs: the events of one level `tracing` records while a closure runs.

use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt;

/// Collects the fields of the events of one level as `name=value` (values in their `Debug`
/// form).
#[derive(Clone)]
struct Events(tracing::Level, Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Visit<'a>(&'a mut Vec<String>);
        impl tracing::field::Visit for Visit<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push(format!("{}={value:?}", field.name()));
            }
        }
        if *event.metadata().level() == self.0 {
            let mut fields = self.1.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            event.record(&mut Visit(&mut fields));
        }
    }
}

/// Runs `run` with a subscriber of its own (on this thread) and returns the fields of every
/// warning it logged, joined by spaces: `message="..." attempt=1 ...`. Empty when none.
pub fn warnings_during(run: impl FnOnce()) -> String {
    logs_during(tracing::Level::WARN, run)
}

/// [`warnings_during`] for the events of `level`.
pub fn logs_during(level: tracing::Level, run: impl FnOnce()) -> String {
    let events = Events(level, Arc::default());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(events.clone()), run);
    let fields = events.1.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    fields.join(" ")
}
