//! Watching one sandboxed process: output into lines and events, the timeout, the kill
//! switches (sandbox deleted, server stopping) and the expiry heartbeat.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use petri_sandbox::Process;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::time::Instant;

use super::ExecEvent;
use super::background::{Control, Progress};
use super::lines::LineSplitter;
use crate::Engine;
use crate::slots::Slot;

/// Longest line sent as one event; longer ones are cut.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// How long output may keep flowing after the command exited or was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Past the output cap, output is discarded at most `DRAIN_CHUNK` per `DRAIN_PAUSE`
/// (100 MiB/s): a verbose program still finishes, a flood costs the server almost nothing.
const DRAIN_CHUNK: usize = 1 << 20;
const DRAIN_PAUSE: Duration = Duration::from_millis(10);
pub(crate) const EXIT_TIMED_OUT: i32 = 124;
pub(crate) const EXIT_KILLED: i32 = 137;
pub(crate) const EXIT_NOT_STARTED: i32 = 126;

/// Why the server stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    TimedOut,
    SandboxGone,
    Shutdown,
    /// A client asked for it (a background process killed through the API).
    Killed,
}

/// How a process is watched besides its output.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    /// Killed past this; `None`: only deletion, expiry or shutdown end it.
    pub timeout: Option<Duration>,
    /// Keep the sandbox's expiry ahead of now while it runs (foreground execs do; background
    /// processes do not, so an idle sandbox still expires and takes them with it).
    pub renew_ttl: bool,
    /// Orders for a background process.
    pub control: Option<&'a mut UnboundedReceiver<Control>>,
}

impl Watch<'_> {
    /// A foreground step with a deadline (installs).
    pub fn deadline(timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            renew_ttl: true,
            control: None,
        }
    }
}

/// Where collected lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    /// The user's command: `output` events, the run's stored output.
    Program,
    /// A dependency install: `install` events only, never mixed into the program's output.
    Install,
    /// The server under test in test mode: `server` events and its own log.
    Server,
}

/// Output collected so far, capped.
#[derive(Debug)]
pub(crate) struct Collected {
    channel: Channel,
    pub text: String,
    pub bytes: u64,
    cap: u64,
    pub truncated: bool,
    pub last_line: Option<String>,
    log: Option<std::io::BufWriter<std::fs::File>>,
    events: UnboundedSender<ExecEvent>,
    /// Told how many bytes are logged after each flush (readers following a background
    /// process's output).
    progress: Option<Arc<watch::Sender<Progress>>>,
}

impl Collected {
    pub fn program(
        cap: u64,
        log: Option<std::fs::File>,
        events: UnboundedSender<ExecEvent>,
    ) -> Self {
        Self {
            channel: Channel::Program,
            text: String::new(),
            bytes: 0,
            cap,
            truncated: false,
            last_line: None,
            log: log.map(std::io::BufWriter::new),
            events,
            progress: None,
        }
    }

    pub fn with_progress(mut self, progress: Option<Arc<watch::Sender<Progress>>>) -> Self {
        self.progress = progress;
        self
    }

    pub fn install(events: UnboundedSender<ExecEvent>) -> Self {
        Self {
            channel: Channel::Install,
            cap: 1 << 20,
            ..Self::program(0, None, events)
        }
    }

    /// The server under test (test mode): its own events and log, capped at 1 MiB.
    pub fn server(log: Option<std::fs::File>, events: UnboundedSender<ExecEvent>) -> Self {
        Self {
            channel: Channel::Server,
            ..Self::program(1 << 20, log, events)
        }
    }

    /// Pushes what was logged so far to disk, so a crash or a reader mid-run sees it.
    fn flush(&mut self) {
        if let Some(log) = &mut self.log
            && log.flush().is_err()
        {
            self.log = None;
        }
        if let Some(progress) = &self.progress {
            let logged = self.bytes;
            progress.send_modify(|p| p.logged = logged);
        }
    }

    fn line(&mut self, line: String) {
        if self.channel == Channel::Install && line.trim().is_empty() {
            return;
        }
        let visible = without_escapes(&line);
        if !visible.trim().is_empty() {
            self.last_line = Some(visible.trim().to_string());
        }
        if self.truncated {
            return;
        }
        let len = line.len() as u64;
        if self.bytes + len > self.cap {
            self.truncated = true;
            return;
        }
        self.bytes += len;
        if let Some(log) = &mut self.log
            && log.write_all(line.as_bytes()).is_err()
        {
            self.log = None;
        }
        self.text.push_str(&line);
        let event = match self.channel {
            Channel::Program => ExecEvent::Output(line),
            Channel::Install => ExecEvent::Install(line),
            Channel::Server => ExecEvent::Server(line),
        };
        // A closed receiver means the client left; the command carries on regardless.
        let _ = self.events.send(event);
    }

    /// Closes the stored output.
    pub fn finish(&mut self) {
        self.flush();
        self.log = None;
    }
}

/// `line` without terminal escape sequences (colours, cursor moves), which say nothing in an
/// error message.
fn without_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in @..~.
                for next in chars.by_ref() {
                    if ('@'..='~').contains(&next) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(ch);
    }
    out
}

/// What supervision of a process observed.
#[derive(Debug)]
pub(crate) struct Supervised {
    pub exit_code: i32,
    pub signal: Option<i32>,
    pub oom_killed: bool,
    pub stop: Option<Stop>,
    pub duration: Duration,
    pub start_error: Option<String>,
}

impl Supervised {
    /// A process that never started.
    pub fn not_started(error: &str) -> Self {
        Self {
            exit_code: EXIT_NOT_STARTED,
            signal: None,
            oom_killed: false,
            stop: None,
            duration: Duration::ZERO,
            start_error: Some(error.to_string()),
        }
    }

    /// The exit code reported to clients: ours when we stopped it, else the process's.
    pub fn reported_exit_code(&self) -> i32 {
        match self.stop {
            Some(Stop::TimedOut) => EXIT_TIMED_OUT,
            Some(_) => EXIT_KILLED,
            None => self.exit_code,
        }
    }
}

/// Runs `process` to its end (or kills it at its timeout, on request, on sandbox deletion or
/// shutdown), feeding its output to `collected`.
pub(crate) async fn supervise(
    engine: &Engine,
    slot: &Slot,
    sandbox_id: &str,
    mut process: Process,
    collected: &mut Collected,
    mut server: Option<&mut Collected>,
    watch: Watch<'_>,
) -> Supervised {
    let Watch {
        timeout,
        renew_ttl,
        mut control,
    } = watch;
    let mut output = process.take_output();
    let mut server_output = process.take_server_output();
    let mut server_lines = LineSplitter::new(MAX_LINE_BYTES);
    let mut server_buffer = vec![0u8; 16 * 1024];
    let mut splitter = LineSplitter::new(MAX_LINE_BYTES);
    let mut buffer = vec![0u8; 64 * 1024];
    // Past the output cap only the end of the stream matters (for the error's last line):
    // the rest is read and dropped without splitting it into lines, so a flood costs the
    // server a copy per read rather than work per line.
    let mut tail: Vec<u8> = Vec::new();
    // ...and read at a bounded pace: a program printing past the cap slows down (its writes
    // block on a full pipe) instead of costing the server a core until its timeout.
    let mut drain_pace: Option<Instant> = None;
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut drain_until: Option<Instant> = None;
    // A running exec is activity: keep the sandbox's expiry ahead of now while it runs.
    let mut heartbeat =
        tokio::time::interval_at(Instant::now() + engine.heartbeat(), engine.heartbeat());
    let mut stop: Option<Stop> = None;
    let mut exit = None;
    loop {
        let eof = output.is_none();
        if eof && server_output.is_none() && exit.is_some() {
            break;
        }
        let drain_deadline = drain_until.unwrap_or_else(Instant::now);
        tokio::select! {
            () = sleep_until(deadline), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::TimedOut);
            }
            order = next_order(control.as_deref_mut()), if stop.is_none() && exit.is_none() => match order {
                Some(Control::Kill) => stop = Some(Stop::Killed),
                Some(Control::Signal { signal, reply }) => {
                    let _ = reply.send(process.signal(signal).map_err(|e| e.to_string()));
                }
                // Nobody can give orders any more: stop listening.
                None => control = None,
            },
            () = slot.doomed.cancelled(), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::SandboxGone);
            }
            () = engine.shutdown.cancelled(), if stop.is_none() && exit.is_none() => {
                stop = Some(Stop::Shutdown);
            }
            _ = heartbeat.tick(), if renew_ttl && exit.is_none() => {
                engine.record_activity(sandbox_id).await;
            }
            () = tokio::time::sleep_until(drain_deadline), if drain_until.is_some() && !(eof && server_output.is_none()) => {
                // Something still holds a pipe after the command ended: stop reading.
                output = None;
                server_output = None;
                process.kill();
            }
            read = read_some(output.as_mut(), &mut buffer, drain_pace), if !eof => match read {
                Ok(0) | Err(_) => output = None,
                Ok(n) if collected.truncated => {
                    keep_tail(&mut tail, &buffer[..n]);
                    if drain_pace.is_none() {
                        buffer.resize(DRAIN_CHUNK, 0);
                    }
                    drain_pace = Some(Instant::now() + DRAIN_PAUSE);
                }
                Ok(n) => {
                    for line in splitter.push(&buffer[..n]) {
                        collected.line(line);
                    }
                    collected.flush();
                }
            },
            read = read_some(server_output.as_mut(), &mut server_buffer, None), if server_output.is_some() => match read {
                Ok(0) | Err(_) => server_output = None,
                Ok(n) => {
                    if let Some(server) = server.as_deref_mut() {
                        for line in server_lines.push(&server_buffer[..n]) {
                            server.line(line);
                        }
                        server.flush();
                    }
                }
            },
            status = process.wait(), if exit.is_none() => {
                exit = Some(status);
                drain_until.get_or_insert(Instant::now() + DRAIN_GRACE);
            }
        }
        if stop.is_some() && drain_until.is_none() {
            process.kill();
            drain_until = Some(Instant::now() + DRAIN_GRACE);
        }
    }
    if let Some(rest) = splitter.finish() {
        collected.line(rest);
    }
    if let Some(server) = server {
        if let Some(rest) = server_lines.finish() {
            server.line(rest);
        }
        server.finish();
    }
    if !tail.is_empty() {
        // Only updates the last line: the output is already capped.
        let mut end = LineSplitter::new(MAX_LINE_BYTES);
        let mut lines = end.push(&tail);
        lines.extend(end.finish());
        for line in lines {
            collected.line(line);
        }
    }
    collected.finish();
    match exit {
        Some(Ok(info)) => Supervised {
            exit_code: info.code,
            signal: info.signal,
            oom_killed: info.oom_killed,
            stop,
            duration: info.duration,
            start_error: None,
        },
        _ => Supervised {
            exit_code: EXIT_KILLED,
            stop,
            ..Supervised::not_started("lost track of the sandbox process")
        },
    }
}

/// Appends `chunk` to `tail`, keeping only the last `MAX_LINE_BYTES`.
fn keep_tail(tail: &mut Vec<u8>, chunk: &[u8]) {
    if chunk.len() >= MAX_LINE_BYTES {
        tail.clear();
        tail.extend_from_slice(&chunk[chunk.len() - MAX_LINE_BYTES..]);
        return;
    }
    tail.extend_from_slice(chunk);
    if tail.len() > MAX_LINE_BYTES {
        tail.drain(..tail.len() - MAX_LINE_BYTES);
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next order for a background process; pending forever for other execs.
async fn next_order(control: Option<&mut UnboundedReceiver<Control>>) -> Option<Control> {
    match control {
        Some(control) => control.recv().await,
        None => std::future::pending().await,
    }
}

/// Reads into `buffer`, not before `not_before`.
async fn read_some(
    output: Option<&mut petri_sandbox::Output>,
    buffer: &mut [u8],
    not_before: Option<Instant>,
) -> std::io::Result<usize> {
    if let Some(at) = not_before {
        tokio::time::sleep_until(at).await;
    }
    match output {
        Some(output) => output.read(buffer).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_only_the_last_line_worth_of_bytes() {
        let mut tail = Vec::new();
        keep_tail(&mut tail, b"first\n");
        keep_tail(&mut tail, &vec![b'x'; MAX_LINE_BYTES - 2]);
        assert_eq!(tail.len(), MAX_LINE_BYTES);
        assert!(tail.starts_with(b"t\n"), "the oldest bytes went first");
        keep_tail(&mut tail, &vec![b'y'; MAX_LINE_BYTES + 10]);
        assert_eq!(tail, vec![b'y'; MAX_LINE_BYTES]);
    }

    #[test]
    fn escapes_are_not_an_error_message() {
        assert_eq!(
            without_escapes("\u{1b}[0m\u{1b}[1;31m[ERROR]\u{1b}[0m boom"),
            "[ERROR] boom"
        );
        assert_eq!(without_escapes("\u{1b}[0m\u{1b}[0m").trim(), "");
    }
}
