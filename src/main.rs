//! retry's entry point: the whole program is [`retry::run`], and the platform layer ends the
//! process as its result says.
//!
//! The C library calls `main` here as it calls a C program's: std's runtime start is left
//! out. Of what it does, retry relies on SIGPIPE ignored and descriptors 0, 1 and 2 open,
//! which `retry::run` does itself first (src/platform/start.rs); the rest, on Linux, is
//! reading /proc/self/maps to word a stack overflow's message, a tenth of the instructions of
//! `retry -- /bin/true` (docs/performance.md). The arguments are taken from `argv` as the C
//! library passes them, where std would have read them from its own copy; the process ends
//! through `Exit::exit`, by `std::process::exit` (which flushes std's stdout) or a signal.
#![no_main]

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;

#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    retry::run(arguments(argc, argv)).exit()
}

/// The `argc` arguments `argv` points to, each as its bytes.
fn arguments(argc: c_int, argv: *const *const c_char) -> Vec<OsString> {
    let count = usize::try_from(argc).unwrap_or(0);
    (0..count)
        .map(|i| {
            // SAFETY: the C library calls `main` with `argv` pointing to `argc` pointers, each
            // to a NUL-terminated string, all valid for the life of the process (C11 5.1.2.2.1).
            let arg = unsafe { CStr::from_ptr(*argv.add(i)) };
            OsString::from_vec(arg.to_bytes().to_vec())
        })
        .collect()
}
