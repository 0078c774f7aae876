//! `sqs-gateway probe`: a health check for images without curl (the container's HEALTHCHECK):
//! one GET, exit 0 on a 2xx answer and 1 on anything else.

use super::EXIT_RUNTIME;
use std::process::ExitCode;
use std::time::Duration;

/// The URL probed when none is given: the liveness route on the default listen port.
pub(super) const DEFAULT_URL: &str = "http://127.0.0.1:8787/healthz";

/// How long the whole request may take before the probe counts as failed.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Requests `url` once; 0 on a 2xx, 1 otherwise (no answer, timeout, redirect, error status).
pub(super) fn run(url: &str) -> ExitCode {
    let outcome = super::block_on(request(url)).and_then(|outcome| outcome);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("probe failed: {reason}");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

async fn request(url: &str) -> Result<(), String> {
    // No proxy (a proxy variable in the container must not answer for the gateway) and no
    // redirects (only the probed route's own 2xx counts).
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .build()
        .map_err(|_| "cannot make an HTTP client".to_owned())?;
    let response = client.get(url).send().await.map_err(|error| {
        if error.is_builder() {
            "not a usable URL".to_owned()
        } else if error.is_timeout() {
            format!("no answer within {} s", TIMEOUT.as_secs())
        } else {
            "no answer (connection failed)".to_owned()
        }
    })?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}", status.as_u16()))
    }
}
