//! retry's integration tests: the built binary, run with real processes, files, a real HTTP
//! server and a real `redis-server`. One test binary, one module per area (as ripgrep and uv
//! do), so that `cargo test` links once; `cargo test --test it AREA` runs one area, e.g.
//! `cargo test --test it redis::` or `RETRY_BLESS=1 cargo test --test it generated`; outputs
//! checked whole are rewritten by `SNAPSHOTS=overwrite cargo test --test it`.
//!
//! Every test has its own temporary directory, server and port: they run in parallel threads
//! of this one process. Shared helpers are in `support`.

// A test may unwrap: a failure there is the test failing, with its place (clippy.toml allows
// it in #[test] functions; this allows it in the helpers too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod action;
mod cancel;
mod cli;
mod completions;
mod config;
mod docs;
mod edges;
mod fleet;
mod generated;
mod hooks;
mod http;
mod presets;
mod redis;
mod reports;
mod signals;
mod spawn;
mod state;
mod stdio;
mod terminal;
mod zombies;
