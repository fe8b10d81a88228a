//! Lays out what retry's start-up touches together, where rustc links with its own lld (x86_64
//! Linux, the default since Rust 1.90); elsewhere nothing is changed.
//!
//! - `startup.order` lists the functions a run executes, and the linker puts them first in
//!   `.text`, so that a run maps a few hundred KiB of code instead of pages spread over 3 MB.
//! - `startup.ld` names the read-only data a run reads (string constants, tables, glibc's own)
//!   and puts them in one section before `.rodata`; it also moves the small code sections that
//!   every run enters (`.init`, `.fini`, glibc's `.iplt` stubs for memcpy and the like) from
//!   behind `.text`, where each took a 64 KiB window of its own, to before it.
//!
//! Both are made by `scripts/startup-order`. A name that no longer exists matches nothing: the
//! layout then degrades, which `cargo bench --bench overhead` shows in its page-fault count, and
//! nothing breaks. `RETRY_LINK_MAP=path` writes the linker's map there (the script reads it).

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=startup.order");
    println!("cargo:rerun-if-changed=startup.ld");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=RETRY_LINK_MAP");
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // Another linker than rustc's lld does not know the options.
    let other_linker = flags.contains("linker-features=-lld")
        || flags.contains("fuse-ld")
        || flags.contains("linker=");
    if target != "x86_64-unknown-linux-gnu" || other_linker {
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&dir).join("startup.order");
    if order.is_file() {
        link_arg(&format!("--symbol-ordering-file={}", order.display()));
        link_arg("--no-warn-symbol-ordering");
    }
    // A partial script: INSERT places its sections in lld's own layout, which it keeps.
    let script = Path::new(&dir).join("startup.ld");
    if script.is_file() {
        link_arg(&format!("-T,{}", script.display()));
    }
    if let Ok(map) = env::var("RETRY_LINK_MAP") {
        link_arg(&format!("-Map={map}"));
    }
}

fn link_arg(arg: &str) {
    println!("cargo:rustc-link-arg-bin=retry=-Wl,{arg}");
}
