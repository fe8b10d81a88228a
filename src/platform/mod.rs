//! The platform layer: every call retry makes into the operating system, and the real world
//! the attempt loop runs in (process groups, spawn, signals, pipes, the terminal, files).
//!
//! The code is POSIX and runs on Linux, macOS and the BSDs. Where Linux has a faster way
//! (splice and tee for stdin replay, pipe sizes, pipe2, ppoll, /proc for a group's processes),
//! it is chosen by `cfg`, and `RUSTFLAGS='--cfg retry_portable'` turns every such path off on
//! Linux too, so that the POSIX code is built and tested where there is no Mac.

pub mod child_fd;
pub mod ended;
pub mod files;
pub mod group;
pub mod hint_dir;
pub mod hooks;
pub mod output;
pub mod process;
pub mod signals;
pub mod spool;
pub mod stdin;
pub mod terminal;
pub mod transcript;
pub mod watcher;
pub mod world;
