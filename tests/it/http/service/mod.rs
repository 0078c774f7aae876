//! The service around the APIs, whatever the dialect: probes and shutdown, the edge, HTTP/2,
//! metrics, logs and traces, TLS, the OpenAPI documents as a set, one set of queues and aliases
//! behind every API, and the backend in front of SQS (fan-in, shared long polls, abandoned work).

mod abandoned_bound;
mod access_log;
mod aliases;
mod backend_fan_in;
mod backend_shared_polls;
mod depth_gauges;
mod edge;
mod http2;
mod one_queue_set;
mod openapi;
mod openapi_answers;
mod operating;
mod probes;
mod traces;
