//! Telemetry export (feature `otel`): the loop's GenAI spans and GenAI metrics to an
//! OpenTelemetry collector over OTLP/HTTP.
//!
//! The agent loop already emits `tracing` spans named and attributed by the OpenTelemetry GenAI
//! semantic conventions (`invoke_agent`, `chat {model}`, `execute_tool {name}`, with
//! `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//! `gen_ai.usage.input_tokens`...). [`Telemetry::layer`] is a `tracing-subscriber` layer that
//! sends them as OTLP spans and derives the GenAI client metrics from the `chat` spans:
//!
//! | metric | unit | what |
//! |---|---|---|
//! | `gen_ai.client.operation.duration` | `s` | each model call, start to last byte |
//! | `gen_ai.client.token.usage` | `{token}` | input and output tokens per call (`gen_ai.token.type`) |
//! | `gen_ai.client.operation.time_to_first_chunk` | `s` | until the first streamed delta |
//!
//! each with `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//! `gen_ai.response.model` and, for failed calls, `error.type`. Message content is not captured
//! unless the agent asks for it (`Agent::with_message_content_capture`), as the conventions
//! require.
//!
//! Exports go through sinew's own HTTP client (hyper and rustls), on the tokio runtime that
//! started the telemetry; `https` endpoints work without another TLS stack.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! let telemetry = sinew::telemetry::Telemetry::start(sinew::telemetry::OtelConfig::new("http://localhost:4318"))?;
//! let subscriber = tracing_subscriber::registry().with(telemetry.layer());
//! tracing::subscriber::set_global_default(subscriber)?;
//! // ... run agents ...
//! tokio::task::spawn_blocking(move || telemetry.shutdown()).await??;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use sinew_http::{HttpClient, HttpRequest};
use tracing::span;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The most of a collector's answer read.
const RESPONSE_LIMIT: usize = 1024 * 1024;

/// What went wrong starting or stopping telemetry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The configuration cannot work (an unknown protocol, no runtime to export on).
    #[error("telemetry configuration: {0}")]
    Config(String),
    /// The OpenTelemetry SDK refused (building an exporter, flushing, shutting down).
    #[error("OpenTelemetry: {0}")]
    Sdk(String),
}

/// How OTLP is encoded on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// `http/protobuf` (the default of the specification).
    #[default]
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

/// Where and how telemetry is sent.
#[derive(Clone)]
#[non_exhaustive]
pub struct OtelConfig {
    /// The collector's base URL (`http://localhost:4318`); `/v1/traces` and `/v1/metrics` are
    /// appended.
    pub endpoint: String,
    /// The encoding.
    pub protocol: OtlpProtocol,
    /// Headers sent with every export (an API key...). `Debug` hides their values.
    pub headers: Vec<(String, String)>,
    /// `service.name` of the resource (default `sinew`).
    pub service_name: String,
    /// How often metrics are exported (default 60 s).
    pub metric_interval: Duration,
    /// How long one export may take (default 10 s).
    pub timeout: Duration,
}

impl fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("OtelConfig")
            .field("endpoint", &sinew_http::redact_url(&self.endpoint))
            .field("protocol", &self.protocol)
            .field("headers", &headers)
            .field("service_name", &self.service_name)
            .field("metric_interval", &self.metric_interval)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl OtelConfig {
    /// Sends to the collector at `endpoint`, with the defaults.
    pub fn new(endpoint: impl Into<String>) -> Self {
        OtelConfig {
            endpoint: endpoint.into(),
            protocol: OtlpProtocol::HttpProtobuf,
            headers: Vec::new(),
            service_name: "sinew".into(),
            metric_interval: Duration::from_secs(60),
            timeout: Duration::from_secs(10),
        }
    }

    /// The configuration the OpenTelemetry environment variables describe, `None` when
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is unset or empty: `OTEL_EXPORTER_OTLP_PROTOCOL`
    /// (`http/protobuf`, `http/json`), `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`,
    /// percent-decoded), `OTEL_SERVICE_NAME`, `OTEL_METRIC_EXPORT_INTERVAL` (ms).
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        let Some(endpoint) = var("OTEL_EXPORTER_OTLP_ENDPOINT") else { return Ok(None) };
        let mut config = OtelConfig::new(endpoint);
        config.protocol = match var("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref() {
            None | Some("http/protobuf") => OtlpProtocol::HttpProtobuf,
            Some("http/json") => OtlpProtocol::HttpJson,
            Some(other) => {
                return Err(TelemetryError::Config(format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported: use http/protobuf or http/json"
                )));
            }
        };
        if let Some(headers) = var("OTEL_EXPORTER_OTLP_HEADERS") {
            for pair in headers.split(',').filter(|p| !p.trim().is_empty()) {
                let Some((name, value)) = pair.split_once('=') else {
                    return Err(TelemetryError::Config(
                        "OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas".into(),
                    ));
                };
                let decode = |s: &str| percent_encoding::percent_decode_str(s.trim()).decode_utf8_lossy().into_owned();
                config.headers.push((decode(name), decode(value)));
            }
        }
        if let Some(name) = var("OTEL_SERVICE_NAME") {
            config.service_name = name;
        }
        if let Some(ms) = var("OTEL_METRIC_EXPORT_INTERVAL") {
            let ms: u64 = ms.parse().map_err(|_| {
                TelemetryError::Config(format!("OTEL_METRIC_EXPORT_INTERVAL={ms} is not a number of milliseconds"))
            })?;
            config.metric_interval = Duration::from_millis(ms.clamp(100, 3_600_000));
        }
        Ok(Some(config))
    }
}

/// Running exporters: the spans' and the metrics'. Dropping it without
/// [`shutdown`](Self::shutdown) may lose what was not exported yet.
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts exporting to `config.endpoint`. Must be called inside a tokio runtime: exports run
    /// on it.
    pub fn start(config: OtelConfig) -> Result<Self, TelemetryError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| TelemetryError::Config("telemetry must start inside a tokio runtime".into()))?;
        let client = ExportClient { http: HttpClient::new(), runtime, timeout: config.timeout };
        let protocol = match config.protocol {
            OtlpProtocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
            OtlpProtocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        };
        let base = config.endpoint.trim_end_matches('/');
        let headers: HashMap<String, String> = config.headers.iter().cloned().collect();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_endpoint(format!("{base}/v1/traces"))
            .with_protocol(protocol)
            .with_timeout(config.timeout)
            .with_headers(headers.clone())
            .build()
            .map_err(|e| TelemetryError::Sdk(e.to_string()))?;
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(format!("{base}/v1/metrics"))
            .with_protocol(protocol)
            .with_timeout(config.timeout)
            .with_headers(headers)
            .build()
            .map_err(|e| TelemetryError::Sdk(e.to_string()))?;
        let resource = Resource::builder().with_service_name(config.service_name.clone()).build();
        let tracer_provider =
            SdkTracerProvider::builder().with_resource(resource.clone()).with_batch_exporter(spans).build();
        let reader =
            opentelemetry_sdk::metrics::PeriodicReader::builder(metrics).with_interval(config.metric_interval).build();
        let meter_provider = SdkMeterProvider::builder().with_resource(resource).with_reader(reader).build();
        Ok(Telemetry { tracer_provider, meter_provider })
    }

    /// The layer to add to a `tracing` subscriber: spans to OTLP, and the GenAI metrics.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.tracer_provider.tracer("sinew");
        let meter = self.meter_provider.meter("sinew");
        tracing_opentelemetry::layer().with_tracer(tracer).and_then(GenAiMetrics::new(&meter))
    }

    /// Exports everything recorded so far. Blocks: call it from `spawn_blocking` or outside
    /// the runtime.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.tracer_provider.force_flush().map_err(|e| TelemetryError::Sdk(e.to_string()))?;
        self.meter_provider.force_flush().map_err(|e| TelemetryError::Sdk(e.to_string()))
    }

    /// Exports what is left and stops. Blocks: call it from `spawn_blocking` or outside the
    /// runtime (which must still be running: exports happen on it).
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        let spans = self.tracer_provider.shutdown().map_err(|e| TelemetryError::Sdk(e.to_string()));
        let metrics = self.meter_provider.shutdown().map_err(|e| TelemetryError::Sdk(e.to_string()));
        spans.and(metrics)
    }
}

/// The exporters' HTTP client: sinew's, run on the runtime telemetry started in (the SDK's
/// exporters call it from their own threads).
#[derive(Clone)]
struct ExportClient {
    http: HttpClient,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

impl fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportClient").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for ExportClient {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let request = HttpRequest {
            method: parts.method,
            url: parts.uri.to_string(),
            headers: parts
                .headers
                .iter()
                .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
                .collect(),
            body,
        };
        let http = self.http.clone();
        let timeout = self.timeout;
        let sent = self.runtime.spawn(async move {
            tokio::time::timeout(timeout, async move {
                let mut response = http.send_once(&request).await?;
                let body = response.bytes(RESPONSE_LIMIT).await?;
                Ok::<_, sinew_core::ProviderError>((response.status, body))
            })
            .await
        });
        let (status, body) = sent
            .await
            .map_err(|e| format!("the export task failed: {e}"))?
            .map_err(|_| format!("the collector did not answer within {timeout:?}"))?
            .map_err(|e| e.to_string())?;
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        Ok(response)
    }
}

/// Duration buckets of the GenAI conventions, in seconds.
const DURATION_BUCKETS: &[f64] =
    &[0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// Token buckets of the GenAI conventions.
const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// The span attributes a metric carries.
const METRIC_ATTRIBUTES: &[&str] =
    &["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model", "error.type"];

/// Derives the GenAI client metrics from the loop's `chat` spans.
struct GenAiMetrics {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    first_chunk: Histogram<f64>,
}

impl GenAiMetrics {
    fn new(meter: &opentelemetry::metrics::Meter) -> Self {
        GenAiMetrics {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            first_chunk: meter
                .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
                .with_unit("s")
                .with_description("Time to receive the first chunk of a streamed answer")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }
}

/// What a `chat` span recorded, kept in its extensions.
struct ChatSpan {
    start: Instant,
    fields: Fields,
}

#[derive(Default)]
struct Fields {
    text: HashMap<&'static str, String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    first_chunk: Option<f64>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if METRIC_ATTRIBUTES.contains(&field.name()) {
            self.text.insert(field.name(), value.to_owned());
        }
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.record_u64(field, u64::try_from(value).unwrap_or_default());
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        if field.name() == "sinew.time_to_first_chunk" {
            self.first_chunk = Some(value);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if METRIC_ATTRIBUTES.contains(&field.name()) {
            self.text.insert(field.name(), format!("{value:?}"));
        }
    }
}

impl<S> Layer<S> for GenAiMetrics
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "chat" {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(ChatSpan { start: Instant::now(), fields });
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if let Some(chat) = span.extensions_mut().get_mut::<ChatSpan>() {
            values.record(&mut chat.fields);
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(chat) = span.extensions_mut().remove::<ChatSpan>() else { return };
        let attributes: Vec<KeyValue> =
            chat.fields.text.iter().map(|(name, value)| KeyValue::new(*name, value.clone())).collect();
        self.duration.record(chat.start.elapsed().as_secs_f64(), &attributes);
        if let Some(seconds) = chat.fields.first_chunk {
            self.first_chunk.record(seconds, &attributes);
        }
        for (kind, count) in [("input", chat.fields.input_tokens), ("output", chat.fields.output_tokens)] {
            if let Some(count) = count {
                let mut attributes = attributes.clone();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &attributes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Option<OtelConfig>, TelemetryError> {
        OtelConfig::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn the_environment_configures_export_as_the_specification_names_it() {
        assert!(from(&[]).unwrap().is_none());
        let config = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-team=ai"),
            ("OTEL_SERVICE_NAME", "assistant"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "5000"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(config.protocol, OtlpProtocol::HttpJson);
        assert_eq!(
            config.headers,
            [("api-key".to_owned(), "s=cret".to_owned()), ("x-team".to_owned(), "ai".to_owned())]
        );
        assert_eq!((config.service_name.as_str(), config.metric_interval), ("assistant", Duration::from_secs(5)));
        assert!(!format!("{config:?}").contains("cret"), "header values stay out of Debug");
        let error = |vars: &[(&str, &str)]| from(vars).unwrap_err().to_string();
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "x"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).contains("grpc")
        );
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "x"), ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")])
                .contains("name=value")
        );
        assert!(
            error(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "x"), ("OTEL_METRIC_EXPORT_INTERVAL", "soon")])
                .contains("milliseconds")
        );
    }

    #[test]
    fn starting_outside_a_runtime_says_so() {
        let error = Telemetry::start(OtelConfig::new("http://127.0.0.1:9")).unwrap_err();
        assert!(error.to_string().contains("tokio runtime"), "{error}");
    }
}
