//! `fleetgate`: the CLI for people and pipelines — gates as code, overrides,
//! clusters, fleet status, audit — plus offline `gate validate`/`preview`.
//! Parses the command line and runs it (the commands live in the library).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use fleetgate::{args, commands, error};

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::from(error::code::ERROR);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::from(error::code::OK),
        Err(error::Error::Different) => ExitCode::from(error::code::DIFFERENT),
        Err(e) => {
            eprintln!("error: {}", e.render());
            e.to_exit_code()
        }
    }
}
