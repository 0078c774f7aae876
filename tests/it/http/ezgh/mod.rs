//! The ezgh pull API over HTTP: receive, acknowledgements and visibility changes, and its OpenAPI
//! document held to the ezgh docs.

mod openapi;
mod receipts;
mod receive;
