//! `tensorbook`: the command line. Today it reports what the runtime sees on this machine
//! (`tensorbook clients`); the Jupyter kernel (`tensorbook kernel ...`) joins it with the kernel
//! issue.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod clients;

/// The tensorbook command line.
#[derive(Parser)]
#[command(
    name = "tensorbook",
    version,
    about = "Rust notebooks with tensors that know where they live"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List clients (binary, host, cuda), their devices and availability, and the session default.
    Clients {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Clients { json } => clients::print(json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tensorbook: {e}");
            ExitCode::FAILURE
        }
    }
}
