//! What the documented command-line clients (`basaltic`, `ezgh`) share: one HTTP call to the
//! gateway with a Bearer key, the answer or the API's error (its code and message), and the exit
//! codes (1 for a refused or failed request; 2 for a command that can't be made, as clap's usage
//! errors).

use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code of a request the API refused, or that failed on its way.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code of a command that can't be made as given (as clap's for bad arguments).
pub const EXIT_USAGE: u8 = 2;
/// Longer than the longest long poll (20 s) plus the gateway's own deadline.
const TIMEOUT: Duration = Duration::from_secs(70);

/// A client of one gateway, with one key.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    endpoint: String,
    key: String,
}

/// Why a call did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The API answered an error.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The API's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// No answer (connection refused, timeout) or one that is not the API's.
    Transport(String),
    /// The command can't be made as given (no key, an unreadable request file): exit 2.
    Usage(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused {
                status,
                code,
                message,
            } => write!(f, "{code}: {message} (HTTP {status})"),
            Failure::Transport(detail) | Failure::Usage(detail) => write!(f, "{detail}"),
        }
    }
}

impl Failure {
    /// Prints the failure and answers the exit code.
    pub fn exit(&self) -> ExitCode {
        eprintln!("error: {self}");
        match self {
            Failure::Usage(_) => ExitCode::from(EXIT_USAGE),
            _ => ExitCode::from(EXIT_REFUSED),
        }
    }
}

impl Client {
    /// A client of the gateway at `endpoint` with the Bearer `key`.
    pub fn new(endpoint: &str, key: &str) -> Result<Self, Failure> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|error| Failure::Transport(error.to_string()))?;
        Ok(Self {
            http,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
        })
    }

    /// One call; the answer's JSON (`null` for an empty answer).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.endpoint))
            .bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        // Without the URL: a query string may carry a receipt handle.
        let response = request.send().await.map_err(|error| {
            Failure::Transport(format!(
                "cannot reach {}: {}",
                self.endpoint,
                error.without_url()
            ))
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| Failure::Transport(error.to_string()))?;
        let answer: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|_| {
                Failure::Transport(format!("an answer that is not JSON (HTTP {status})"))
            })?
        };
        if status.is_success() {
            return Ok(answer);
        }
        // basaltic: {"error": {"code", "message"}}; ezgh: {"error": code, "message"}.
        let (code, message) = match &answer["error"] {
            Value::Object(error) => (&error["code"], &error["message"]),
            code => (code, &answer["message"]),
        };
        Err(Failure::Refused {
            status: status.as_u16(),
            code: code.as_str().unwrap_or("unknown").to_owned(),
            message: message.as_str().unwrap_or("").to_owned(),
        })
    }
}

/// How a command prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// The API's JSON, for scripts.
    Json,
}
