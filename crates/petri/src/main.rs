//! `petri`: the sandbox server binary.
#![forbid(unsafe_code)]

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
    /// Inside a sandbox: confine this process with Landlock, then run the command.
    #[command(hide = true)]
    SandboxInit {
        /// A directory the command may write below (repeatable).
        #[arg(long = "write")]
        writable: Vec<std::path::PathBuf>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Check what isolation this host gives (exit 0: full, 2: degraded, 1: none).
    Doctor {
        /// The bubblewrap executable.
        #[arg(long, env = "PETRI_BWRAP", default_value = "bwrap")]
        bwrap: std::path::PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Command::SandboxInit { writable, command } = &cli.command {
        // Runs as the first process of every exec: nothing else to set up, fail closed.
        let (program, args) = command.split_first().expect("clap requires a command");
        let error = petri_sandbox::confine_and_exec(writable, std::path::Path::new(program), args);
        eprintln!("petri-init: {error}");
        return std::process::ExitCode::from(126);
    }
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
        Command::SandboxInit { .. } => unreachable!("handled before logging starts"),
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
