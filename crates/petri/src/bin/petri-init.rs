//! `petri-init`: the first process of every exec, inside the sandbox. It confines itself with
//! Landlock (writes only below the `--write` directories) and becomes the command:
//!
//! ```text
//! petri-init --write /sandbox --write /tmp -- /bin/sh -c '...'
//! ```
//!
//! A separate, small binary (no argument-parsing framework, no async runtime) because it
//! starts before every command. It fails closed: if the restriction cannot be applied, the
//! command does not run.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code when the command could not be started (as a shell reports it).
const EXIT_CANNOT_RUN: u8 = 126;

fn parse(
    mut args: impl Iterator<Item = OsString>,
) -> Result<(Vec<PathBuf>, Vec<OsString>), String> {
    let mut writable = Vec::new();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--write") => writable.push(PathBuf::from(
                args.next().ok_or("--write needs a directory")?,
            )),
            Some("--") => {
                let command: Vec<OsString> = args.collect();
                if command.is_empty() {
                    return Err("no command after --".into());
                }
                return Ok((writable, command));
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Err("usage: petri-init [--write DIR]... -- COMMAND [ARGS]...".into())
}

fn main() -> ExitCode {
    let error = match parse(std::env::args_os().skip(1)) {
        Ok((writable, command)) => {
            let (program, args) = command.split_first().expect("parse checked it");
            petri_sandbox::confine_and_exec(&writable, std::path::Path::new(program), args)
        }
        Err(usage) => usage,
    };
    eprintln!("petri-init: {error}");
    ExitCode::from(EXIT_CANNOT_RUN)
}
