//! `petri`: the sandbox server binary.
#![forbid(unsafe_code)]

mod cli;
mod config;
mod doctor;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "petri",
    version,
    about = "Self-hosted sandbox server for AI-generated code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(Box<config::ServeArgs>),
    #[command(flatten)]
    Remote(cli::Remote),
    /// Check what isolation this host gives (exit 0: full, 2: degraded, 1: none).
    Doctor {
        /// The bubblewrap executable.
        #[arg(long, env = "PETRI_BWRAP", default_value = "bwrap")]
        bwrap: std::path::PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::Remote(command) => return cli::run(command),
        command => Cli { command },
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PETRI_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Serve(args) => serve::run(*args),
        Command::Doctor { bwrap } => return std::process::ExitCode::from(doctor::run(&bwrap)),
        Command::Remote(_) => unreachable!("client commands return above"),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("petri: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
