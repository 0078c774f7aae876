//! # sqs-gateway
//!
//! Simple, safe HTTPS queue APIs in front of Amazon SQS.
//!
//! # Architecture
//!
//! ```text
//!  HTTP clients ──> server           the assembly: opens the stores once, plugs the dialects
//!                      │              in from one list (`server::dialects`); accept loop (HTTP/1.1
//!                      │              and HTTP/2, connection limit, head/idle/body deadlines,
//!                      │              TLS reloaded on SIGHUP or file change); each request's id,
//!                      │              span and metrics (observe); the edge, which answers what no
//!                      │              handler does in the shape of the path's dialect; probes,
//!                      │              OpenAPI documents, the Prometheus scrape; the web
//!                      │              console (`src/console/assets/`, embedded: a browser
//!                      │              client of the basaltic API, nothing more)
//!                      v
//!                  api::<dialect>     ezgh, sombus, basaltic, sqs: wire types, routes, the
//!                      │              dialect's auth and error shape, its edge shape;
//!                      │              api::common: the plug (`PlugContext`, `Dialect`, `EdgeShape`) and what
//!                      │              every dialect shares, naming none of them
//!                      v
//!                  credentials        API keys (ezgh, basaltic), SigV4 keys, admin keys, OAuth
//!                      │              clients and their tokens (sombus): who a caller is, its
//!                      │              grants; the key sets are swapped whole when the server
//!                      │              re-reads the config file (SIGHUP or a change: reload);
//!                      │              the sombus store on a shared server behind its port
//!                      │              (`oauth::shared_server`)
//!                      v
//!                  core::Gateway      authorizes every operation (access), queue registry with
//!                      │              each API's aliases (bound, or derived from the queue's
//!                      │              name: one set of queues for every API), sealed handles,
//!                      │              attribute codec, rate limits, SQS content rules, one error;
//!                      │              core::state: the state port and what it keeps (ledger,
//!                      │              kept answers, the limits' counts); the backend port;
//!                      │              core::metrics: the meters every layer counts in, the port
//!                      │              metered, the basaltic metrics history; core::push: the
//!                      │              runner and the push ports (admin, records); core::spans:
//!                      │              the spans `telemetry` exports over OTLP when tracing is on
//!                      v
//!                  backend            adapters of the backend port: `sqs` (Amazon SQS or
//!                                     LocalStack), `embedded` (the in-process engine)
//!                  state              adapters of the state port kept outside the process:
//!                                     `redis` (Redis or Valkey, shared by replicas; also the
//!                                     sombus credential server, the metrics history and the
//!                                     push subscriptions' records),
//!                                     `restart_file` (one node's state across a restart)
//!                  push               the adapter of the core's push ports: posts deliveries
//!                                     (HTTP, Standard Webhooks signatures, the address guard)
//!                                     and keeps the subscriptions made through the API
//!                                     (`managed`: records, audit trail, runners followed)
//! ```
//!
//! Beside the service, `client` is what the documented command-line clients (`src/bin/basaltic.rs`,
//! `src/bin/ezgh.rs`) share: HTTP calls to the gateway, never its internals; `private_dir` is the
//! directory one process holds (the sombus store's, one node's restart state).
//!
//! Data flows down and back up once: a dialect parses its wire request into core types, the core
//! authorizes, translates handles and consults the ledger, the backend makes one batched call, and
//! the dialect renders the answer. Imports run one way: the server assembles dialects, dialects use
//! credentials and the core, and the backend and state adapters implement the ports the core owns
//! (the core imports no adapter, no adapter knows a dialect, no dialect talks to a backend).

pub mod api;
pub mod backend;
pub mod client;
pub mod config;
pub mod core;
pub mod credentials;
pub mod private_dir;
pub mod push;
pub mod server;
pub mod setup;
pub mod state;
pub mod telemetry;
