//! Sends `tracing` events to the Worker's console, one JSON object a line, so that
//! `wrangler dev` and `wrangler tail` show d1-retry's retry lines with their fields.

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Registry;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Every line starts with this, so it is easy to pick out of the console.
pub const LINE_PREFIX: &str = "[tracing] ";

/// Installs the console layer as the global subscriber, once per isolate.
pub fn install() {
    // A second call (the isolate is reinitialised after a panic) keeps the first one.
    let _ = tracing::subscriber::set_global_default(Registry::default().with(ConsoleLayer));
}

struct ConsoleLayer;

impl<S: Subscriber> Layer<S> for ConsoleLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let mut fields = Map::new();
        fields.insert("level".into(), metadata.level().as_str().into());
        fields.insert("target".into(), metadata.target().into());
        event.record(&mut JsonFields(&mut fields));
        worker::console_log!("{LINE_PREFIX}{}", Value::Object(fields));
    }
}

struct JsonFields<'a>(&'a mut Map<String, Value>);

impl Visit for JsonFields<'_> {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    // `%value` fields (d1.failure) and the message arrive here, already formatted.
    fn record_debug(&mut self, field: &Field, value: &dyn core::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}
