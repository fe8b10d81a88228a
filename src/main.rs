//! retry's entry point: the whole program is [`retry::run`], and the platform layer ends the
//! process as its result says.
//!
//! The C library calls `main` here as it calls a C program's: std's runtime start is left
//! out, and what of it retry relies on, `retry::run` does first (src/platform/start.rs says
//! what and why). The arguments are taken from `argv` as the C library passes them; the
//! process ends through `Exit::exit`, by `std::process::exit` (which flushes std's stdout) or
//! by a signal.
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
