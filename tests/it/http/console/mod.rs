//! What the web console reads through the gateway's APIs (its browser run is `tests/console/`).

mod api;
