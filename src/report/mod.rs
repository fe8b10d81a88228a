//! What retry tells: the log lines of a run (text or JSON), the summary and metrics files, and
//! `--explain`. Reads the policy and what happened; decides nothing.

pub mod explain;
pub mod keys;
pub mod log;
pub mod reporter;
pub mod summary;
pub mod words;
