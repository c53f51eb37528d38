//! `strata`: the command line of the strata engine. See `strata --help` and README.md.

mod cli;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("strata: {failure}");
            ExitCode::from(failure.code())
        }
    }
}
