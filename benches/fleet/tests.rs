//! The unit tests of the fleet bench's models, the test target `fleet_models` (Cargo.toml):
//! `cargo test --features research --test fleet_models`, which `.ci/run` runs. The bench
//! (`main.rs`) is built without a test harness, so its own build never compiles them, and
//! they need the `research` feature's dependencies, which a plain `cargo test` leaves out.
//! Scenario B's model (`spike.rs`) has none; it is compiled, and checked by clippy, with the
//! bench.

// The models' items that the bench uses and their tests do not.
#![allow(dead_code)]

#[path = "brooker.rs"]
mod brooker;
#[path = "brooker2022.rs"]
mod brooker2022;
#[path = "collapse.rs"]
mod collapse;
#[path = "grpc.rs"]
mod grpc;
#[path = "keyed.rs"]
mod keyed;
#[path = "rules.rs"]
mod rules;
