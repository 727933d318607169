//! `petri-init`: the first process of every exec, inside the sandbox. It confines itself with
//! Landlock (writes only below the `--write` directories), then becomes the command:
//!
//! ```text
//! petri-init --write /sandbox --write /tmp -- /bin/sh -c '...'
//! ```
//!
//! In test mode (`--serve CMD`) it first starts CMD in the background with its output on
//! descriptor `--server-fd`, waits until it is ready (`--ready-port`, `--ready-path`,
//! `--ready-timeout`), runs the command as the test runner, then stops the server.
//!
//! A separate, small binary (no argument-parsing framework, no async runtime) because it
//! starts before every command. It fails closed: if the restriction cannot be applied, the
//! command does not run.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use petri_sandbox::TestPlan;

/// Exit code when the command could not be started (as a shell reports it).
const EXIT_CANNOT_RUN: u8 = 126;

#[derive(Debug, Default)]
struct Options {
    writable: Vec<PathBuf>,
    serve: Option<String>,
    ready_port: Option<u16>,
    ready_path: Option<String>,
    ready_timeout: Option<u64>,
    server_fd: Option<i32>,
    command: Vec<OsString>,
}

fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Options, String> {
    let mut options = Options::default();
    let value = |args: &mut dyn Iterator<Item = OsString>, flag: &str| {
        args.next()
            .and_then(|v| v.into_string().ok())
            .ok_or(format!("{flag} needs a value"))
    };
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--write") => options.writable.push(value(&mut args, "--write")?.into()),
            Some("--serve") => options.serve = Some(value(&mut args, "--serve")?),
            Some("--ready-port") => {
                let port = value(&mut args, "--ready-port")?;
                options.ready_port = Some(port.parse().map_err(|_| format!("bad port {port}"))?);
            }
            Some("--ready-path") => options.ready_path = Some(value(&mut args, "--ready-path")?),
            Some("--ready-timeout") => {
                let secs = value(&mut args, "--ready-timeout")?;
                options.ready_timeout =
                    Some(secs.parse().map_err(|_| format!("bad timeout {secs}"))?);
            }
            Some("--server-fd") => {
                let fd = value(&mut args, "--server-fd")?;
                options.server_fd = Some(fd.parse().map_err(|_| format!("bad descriptor {fd}"))?);
            }
            Some("--") => {
                options.command = args.collect();
                if options.command.is_empty() {
                    return Err("no command after --".into());
                }
                return Ok(options);
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Err("usage: petri-init [--write DIR]... [--serve CMD ...] -- COMMAND [ARGS]...".into())
}

fn run(options: Options) -> Result<u8, String> {
    let Some(serve) = options.serve else {
        let (program, args) = options.command.split_first().expect("parse checked it");
        return Err(petri_sandbox::confine_and_exec(
            &options.writable,
            std::path::Path::new(program),
            args,
        ));
    };
    petri_sandbox::confine(&options.writable)?;
    let plan = TestPlan {
        serve,
        ready_port: options.ready_port,
        ready_path: options.ready_path,
        ready_timeout: Duration::from_secs(options.ready_timeout.unwrap_or(60)),
        server_fd: options.server_fd.ok_or("--serve needs --server-fd")?,
    };
    petri_sandbox::run_test_plan(&plan, &options.command)
}

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)).and_then(run) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("petri-init: {error}");
            ExitCode::from(EXIT_CANNOT_RUN)
        }
    }
}
