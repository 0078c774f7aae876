//! The gateway's spans exported over OTLP/HTTP (protobuf) when `[tracing]` enables it: the
//! section, the tracer provider (batched export, parent-based ratio sampling) and the HTTP
//! client it posts with.
//!
//! The SDK's batch processor exports on a thread of its own, outside any async runtime; its
//! posts run on a one-thread runtime this module owns, so an export neither needs the serving
//! runtime nor outlives it badly (the last batch is posted after the server stopped).

use crate::core::error::SettingError;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde::Deserialize;
use std::time::Duration;

/// The service name spans carry when neither `tracing.service_name` nor `OTEL_SERVICE_NAME` is set.
const DEFAULT_SERVICE_NAME: &str = "sqs-gateway";
/// The longest one export may take (the OTLP exporters' default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer read: it is a status and, at most, a short message.
const MAX_ANSWER: usize = 64 * 1024;

/// The gateway's own spans (`[tracing]`), off by default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingConfig {
    /// Export spans at all.
    pub enabled: bool,
    /// The collector's OTLP/HTTP traces URL (`http://collector:4318/v1/traces`). Unset:
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `/v1/traces`, else `http://localhost:4318/v1/traces`. Headers (a vendor's key) come from
    /// `OTEL_EXPORTER_OTLP_HEADERS`, never from this file.
    pub endpoint: Option<String>,
    /// The share of traces begun at the gateway that are kept, 0.0 to 1.0; a request that
    /// continues a caller's trace follows the caller's decision (parent-based sampling).
    pub sample_ratio: f64,
    /// `service.name` of the spans. Unset: `OTEL_SERVICE_NAME`, else `sqs-gateway`.
    pub service_name: Option<String>,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: None,
            sample_ratio: 1.0,
            service_name: None,
        }
    }
}

impl TracingConfig {
    /// What the types cannot check: the ratio's range, the endpoint's shape.
    pub fn validate(&self) -> Result<(), SettingError> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(SettingError::new(
                "tracing.sample_ratio",
                "must be 0.0 to 1.0",
            ));
        }
        if let Some(endpoint) = &self.endpoint {
            let url = url::Url::parse(endpoint).map_err(|error| {
                SettingError::new("tracing.endpoint", format!("not a URL: {error}"))
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err(SettingError::new(
                    "tracing.endpoint",
                    "must be an http:// or https:// URL with a host",
                ));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(SettingError::new(
                    "tracing.endpoint",
                    "must carry no credentials (give them in OTEL_EXPORTER_OTLP_HEADERS)",
                ));
            }
        }
        if self.service_name.as_deref().is_some_and(str::is_empty) {
            return Err(SettingError::new(
                "tracing.service_name",
                "must not be empty",
            ));
        }
        Ok(())
    }
}

/// Why the exporter could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The posting runtime could not start.
    #[error("cannot start the span exporter's thread: {0}")]
    Runtime(#[from] std::io::Error),
    /// The HTTP client or the exporter refused their settings.
    #[error("cannot make the span exporter: {0}")]
    Exporter(String),
}

/// Makes the tracer provider `config` describes (which must be enabled).
pub fn provider(config: &TracingConfig) -> Result<SdkTracerProvider, ExportError> {
    let client = ExportClient::new()?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(endpoint) = &config.endpoint {
        exporter = exporter.with_endpoint(endpoint.clone());
    }
    let exporter = exporter
        .build()
        .map_err(|error| ExportError::Exporter(error.to_string()))?;
    let service_name = config
        .service_name
        .clone()
        .or_else(|| std::env::var("OTEL_SERVICE_NAME").ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            config.sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(service_name)
                .with_attribute(opentelemetry::KeyValue::new(
                    "service.version",
                    env!("CARGO_PKG_VERSION"),
                ))
                .build(),
        )
        .build())
}

/// The exporter's HTTP client: the gateway's reqwest, each post run on a runtime of the
/// exporter's own.
struct ExportClient {
    client: reqwest::Client,
    /// Always `Some` until dropped, then shut down without waiting (a drop may happen where a
    /// runtime may not block).
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for ExportClient {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportClient")
    }
}

impl ExportClient {
    fn new() -> Result<Self, ExportError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sqs-gateway-otlp")
            .enable_all()
            .build()?;
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| ExportError::Exporter(error.to_string()))?;
        Ok(Self {
            client,
            runtime: Some(runtime),
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let runtime = self.runtime.as_ref().ok_or("the exporter is shut down")?;
        let posted = runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let mut answer = client.execute(request).await?;
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                let room = MAX_ANSWER.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if room <= chunk.len() {
                    break;
                }
            }
            let mut response = Response::new(Bytes::from(body));
            *response.status_mut() = answer.status();
            *response.headers_mut() = std::mem::take(answer.headers_mut());
            Ok::<_, HttpError>(response)
        });
        posted.await?
    }
}
