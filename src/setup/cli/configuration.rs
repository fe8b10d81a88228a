//! Configuration: which config file and profile are read.

use std::path::PathBuf;

use clap::Args;

use super::parsers::Offered;

use crate::setup::presets;

/// Configuration.
#[derive(Debug, Args)]
#[group(skip)]
#[command(next_help_heading = "Configuration")]
pub struct Configuration {
    /// Read settings from this config file instead of $RETRY_CONFIG or
    /// ~/.config/retry/config.toml.
    #[arg(long, value_name = "PATH", allow_hyphen_values = true)]
    pub config: Option<PathBuf>,

    /// Read no config file at all, not even $RETRY_CONFIG: what a script that must not depend
    /// on a user's settings gives, and the way past a config file that is broken.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,

    /// Use this profile of the config file, or a built-in preset of that name.
    #[arg(
        short = 'p',
        long,
        value_name = "NAME",
        value_parser = Offered::new(|s: &str| Ok(s.to_string()), presets::names),
        hide_possible_values = true,
        allow_hyphen_values = true,
    )]
    pub profile: Option<String>,
}
