//! The machine's ceilings the gateway is judged against: a bare axum handler answering canned
//! ezgh answers (the most requests/s HTTP on this machine allows), and a write+fdatasync loop
//! (the most durable commits/s its disk allows).

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// Serves the canned answers until killed: `POST` of an ezgh receive path answers
/// `receive_answer`, `POST /v1/receipts/ack` answers `ack_answer`, `GET /ready` answers 200.
/// Bodies are read in full and ignored.
pub(crate) async fn serve(
    listen: SocketAddr,
    receive_answer: &Path,
    ack_answer: &Path,
) -> Result<(), String> {
    let read = |path: &Path| {
        std::fs::read(path)
            .map(Bytes::from)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let (receive, ack) = (read(receive_answer)?, read(ack_answer)?);
    let router = Router::new()
        .route(
            "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive",
            post(move |_body: Bytes| async move { json(receive.clone()) }),
        )
        .route(
            "/v1/receipts/ack",
            post(move |_body: Bytes| async move { json(ack.clone()) }),
        )
        .route("/ready", get(|| async { "ready" }));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    axum::serve(listener, router)
        .await
        .map_err(|e| format!("ceiling server failed: {e}"))
}

fn json(body: Bytes) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], body)
}

/// What the disk allows: small write + fdatasync operations a second in a loop, and the median
/// time of one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fsync {
    pub(crate) per_second: f64,
    pub(crate) p50: Duration,
}

/// Small write + fdatasync operations on a file in `dir`, for `duration`: the most commits a
/// second anything durable can make there, and the median time of one.
pub(super) async fn fsync_ceiling(dir: &Path, duration: Duration) -> Result<Fsync, String> {
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        let path = dir.join("fsync-ceiling");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // A block in place first, so the loop's syncs carry data, not a growing file.
        file.write_all(&[0u8; 4096])
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let started = Instant::now();
        let mut operations = 0u64;
        let mut times = Vec::new();
        while started.elapsed() < duration {
            let record = operations.to_le_bytes();
            let one = Instant::now();
            std::os::unix::fs::FileExt::write_all_at(&file, &record, (operations % 64) * 64)
                .and_then(|()| file.sync_data())
                .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
            times.push(one.elapsed());
            operations += 1;
        }
        let elapsed = started.elapsed();
        drop(file);
        let _ = std::fs::remove_file(&path);
        times.sort_unstable();
        Ok(Fsync {
            per_second: operations as f64 / elapsed.as_secs_f64(),
            p50: super::measure::percentile(&times, 0.5).unwrap_or_default(),
        })
    })
    .await
    .map_err(|e| e.to_string())?
}
