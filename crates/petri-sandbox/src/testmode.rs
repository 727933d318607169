//! Test mode, inside the sandbox (run by `petri-init` after Landlock): start the server in the
//! background with its output on its own pipe, wait until it is ready (a port in LISTEN state
//! in the sandbox's network namespace, or an HTTP answer on `ready_path`), run the test
//! command in the foreground, then stop the server and everything it started.
//!
//! A server that exits cleanly before listening is a script that ran to completion: the tests
//! run anyway. Failures of the setup exit with [`EXIT_SETUP_FAILED`] after one line on stderr
//! saying what went wrong (the server reports it as the run's error).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Exit code when the server could not be brought up (nothing was tested).
pub const EXIT_SETUP_FAILED: u8 = 125;
/// How often readiness is checked.
const POLL: Duration = Duration::from_millis(50);
/// How long a stopped server gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What to start and how to know it is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestPlan {
    /// The server (or script), run with `sh -c`.
    pub serve: String,
    /// The port to wait for; `None`: the first port anything in the sandbox listens on.
    pub ready_port: Option<u16>,
    /// An HTTP path that must answer (any status below 500) before the tests start.
    pub ready_path: Option<String>,
    pub ready_timeout: Duration,
    /// The inherited descriptor the server's output goes to (a pipe the Petri server reads as
    /// its own channel).
    pub server_fd: i32,
}

/// Ports in LISTEN state in this network namespace (`/proc/net/tcp` and `tcp6`).
pub fn listening_ports() -> Vec<u16> {
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else {
                continue;
            };
            if *state != "0A" {
                continue;
            }
            if let Some(port) = local
                .rsplit(':')
                .next()
                .and_then(|hex| u16::from_str_radix(hex, 16).ok())
            {
                ports.push(port);
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Whether `path` on `127.0.0.1:port` answers with a status below 500.
fn answers(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    if stream.read_exact(&mut head).is_err() {
        return false;
    }
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|code| code.parse::<u16>().ok())
        .is_some_and(|code| code < 500)
}

enum Readiness {
    Ready(Option<u16>),
    /// The server exited before it was ready, with this code.
    Exited(i32),
    TimedOut,
}

/// `already` are ports that listened before the server started (the sandbox's background
/// processes share its network): without an explicit port, only a new one means ready.
fn wait_ready(server: &mut Child, plan: &TestPlan, already: &[u16]) -> Readiness {
    let deadline = Instant::now() + plan.ready_timeout;
    loop {
        let listening = listening_ports();
        let candidates: Vec<u16> = match plan.ready_port {
            Some(port) => listening.into_iter().filter(|p| *p == port).collect(),
            None => listening
                .into_iter()
                .filter(|p| !already.contains(p))
                .collect(),
        };
        let ready = match &plan.ready_path {
            None => candidates.first().copied(),
            Some(path) => candidates.into_iter().find(|port| answers(*port, path)),
        };
        if ready.is_some() {
            return Readiness::Ready(ready);
        }
        if let Ok(Some(status)) = server.try_wait() {
            return Readiness::Exited(status.code().unwrap_or(128));
        }
        if Instant::now() >= deadline {
            return Readiness::TimedOut;
        }
        std::thread::sleep(POLL);
    }
}

/// Stops the server's whole process group: SIGTERM, then SIGKILL after a grace period.
fn stop(server: &mut Child) {
    let Some(group) = rustix::process::Pid::from_raw(server.id() as i32) else {
        return;
    };
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if matches!(server.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(POLL);
    }
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let _ = server.wait();
}

/// Runs the plan, then `tests`; returns the exit code to leave with (the test runner's).
pub fn run(plan: &TestPlan, tests: &[OsString]) -> Result<u8, String> {
    let log = std::fs::File::from(crate::sys::adopt_inherited(plan.server_fd).map_err(|e| {
        format!(
            "no server output channel on descriptor {}: {e}",
            plan.server_fd
        )
    })?);
    let mut note = log.try_clone().map_err(|e| e.to_string())?;
    let already = listening_ports();
    let started = Instant::now();
    let mut server = Command::new("/bin/sh")
        .args(["-c", &plan.serve])
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    match wait_ready(&mut server, plan, &already) {
        Readiness::Ready(port) => {
            let at = port.map_or(String::new(), |p| format!(" on port {p}"));
            let _ = writeln!(
                note,
                "[petri] ready{at} after {} ms",
                started.elapsed().as_millis()
            );
        }
        Readiness::Exited(0) => {
            let _ = writeln!(note, "[petri] exited 0 before listening: running the tests");
        }
        Readiness::Exited(code) => {
            eprintln!("the server exited with code {code} before it was ready");
            stop(&mut server);
            return Ok(EXIT_SETUP_FAILED);
        }
        Readiness::TimedOut => {
            let what = match (plan.ready_port, &plan.ready_path) {
                (Some(port), Some(path)) => format!("answer GET {path} on port {port}"),
                (Some(port), None) => format!("listen on port {port}"),
                (None, Some(path)) => format!("listen and answer GET {path}"),
                (None, None) => "listen on a port".into(),
            };
            eprintln!(
                "the server did not {what} within {} s",
                plan.ready_timeout.as_secs()
            );
            stop(&mut server);
            return Ok(EXIT_SETUP_FAILED);
        }
    }
    let (program, args) = tests.split_first().ok_or("no test command")?;
    let status = Command::new(program)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run the tests: {e}"))?;
    let crashed = match server.try_wait() {
        Ok(Some(status)) if status.code() != Some(0) => status.code(),
        _ => None,
    };
    stop(&mut server);
    if let Some(code) = crashed {
        eprintln!("the server exited with code {code} while the tests ran");
    }
    Ok(u8::try_from(status.code().unwrap_or(128)).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_ports_are_read_from_the_kernel() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(listening_ports().contains(&port));
        drop(listener);
    }
}
