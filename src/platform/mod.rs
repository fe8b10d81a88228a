//! The platform layer: every call retry makes into the operating system, and the real world
//! the attempt loop runs in (process groups, spawn, signals, pipes, the terminal, files).
//!
//! The code is POSIX and runs on Linux, macOS and the BSDs. Where Linux has a faster way
//! (splice and tee for stdin replay, pipe sizes, pipe2, ppoll, /proc for a group's processes),
//! it is chosen by `cfg`, and `RUSTFLAGS='--cfg retry_portable'` turns every such path off on
//! Linux too, so that the POSIX code is built and tested where there is no Mac.

mod child_fd;
pub mod clock;
pub mod exit;
pub mod files;
mod group;
mod hint_dir;
mod hooks;
mod output;
pub mod parent;
mod pipe;
pub mod process;
pub mod signals;
mod spool;
pub mod start;
mod status;
pub mod stderr;
mod stdin;
mod terminal;
pub mod time;
pub mod transcript;
mod watcher;
pub mod world;
