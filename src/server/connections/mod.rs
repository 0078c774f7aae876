//! Accepts TCP connections and serves HTTP/1.1 and HTTP/2 on them with the limits a public
//! endpoint needs: a cap on open connections (refused with a clear 503), a deadline for each
//! request head, an idle timeout between requests, a deadline for each request body, and request
//! targets too long to route answered in their dialect's shape. A waiting long poll is a request
//! in flight, not idle. With TLS, the handshake comes first, within the request-head deadline, and
//! ALPN picks the version; on plain HTTP the client's first bytes do (HTTP/2's preface).
//!
//! Each file has one job, and they depend one way, from the accept loop down: `accept` takes
//! connections within the caps and hands each to `handshake`, which settles TLS and the version
//! and serves it by `http1` or `http2`. Both follow the connection's `activity` for its deadlines
//! (HTTP/1.1 through the `watched` stream) and answer each request through `service`.
//! `connection` is what one connection is served with; `settings`, the configured limits.

mod accept;
mod activity;
mod connection;
mod handshake;
mod http1;
mod http2;
mod service;
mod settings;
mod watched;

pub use accept::{fit_to_open_file_limit, serve};
pub use settings::ConnectionSettings;
pub use watched::MAX_REQUEST_LINE;
