//! retry's entry point: the whole program is [`retry::run`], and the platform layer ends the
//! process as its result says.

fn main() {
    // std's runtime has already done what retry relies on: SIGPIPE is ignored (a write to a
    // closed pipe is an error, not the end of retry) and descriptors 0, 1 and 2 are open (on
    // /dev/null where they were closed), so that no pipe or file of retry's takes their
    // numbers. tests/it/cli/child.rs checks both.
    retry::run(std::env::args_os()).exit()
}
