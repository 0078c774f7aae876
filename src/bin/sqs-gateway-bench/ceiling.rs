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

/// Small write + fdatasync operations a second on a file in `dir`, for `duration`: the most
/// commits a second anything durable can make there.
pub(super) async fn fsync_ceiling(dir: &Path, duration: Duration) -> Result<f64, String> {
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
        while started.elapsed() < duration {
            let record = operations.to_le_bytes();
            std::os::unix::fs::FileExt::write_all_at(&file, &record, (operations % 64) * 64)
                .and_then(|()| file.sync_data())
                .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
            operations += 1;
        }
        let elapsed = started.elapsed();
        drop(file);
        let _ = std::fs::remove_file(&path);
        Ok(operations as f64 / elapsed.as_secs_f64())
    })
    .await
    .map_err(|e| e.to_string())?
}
