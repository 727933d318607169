//! A running exec: its merged output pipe, its exit and its kill switch.

use std::time::{Duration, Instant};

use crate::SandboxError;
use crate::cgroup::OomWatch;

/// The read end of the exec's merged stdout+stderr pipe.
pub type Output = tokio::net::unix::pipe::Receiver;

/// How an exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// Exit code in shell convention: the process's code, or 128 + signal number.
    pub code: i32,
    /// The terminating signal, when the process did not exit normally.
    pub signal: Option<i32>,
    /// The kernel OOM-killed a process of the sandbox during this exec.
    pub oom_killed: bool,
    pub duration: Duration,
}

/// One running process tree. Dropping it kills the tree.
#[derive(Debug)]
pub struct Process {
    child: tokio::process::Child,
    output: Option<Output>,
    oom: OomWatch,
    started: Instant,
    proxy_listener: Option<std::net::TcpListener>,
    server_output: Option<Output>,
}

impl Process {
    pub(crate) fn new(
        child: tokio::process::Child,
        output: Output,
        oom: OomWatch,
        proxy_listener: Option<std::net::TcpListener>,
        server_output: Option<Output>,
    ) -> Self {
        Self {
            child,
            output: Some(output),
            oom,
            started: Instant::now(),
            proxy_listener,
            server_output,
        }
    }

    /// In test mode, the server's own output pipe (once).
    pub fn take_server_output(&mut self) -> Option<Output> {
        self.server_output.take()
    }

    /// The listener inside the exec's network namespace, for [`crate::Network::RegistryProxy`]:
    /// whoever serves it decides what the exec can reach.
    pub fn take_proxy_listener(&mut self) -> Option<std::net::TcpListener> {
        self.proxy_listener.take()
    }

    /// Takes the output pipe (once). It reaches end-of-file when every process of the tree
    /// has exited.
    pub fn take_output(&mut self) -> Option<Output> {
        self.output.take()
    }

    /// Waits for the tree's root to exit. Cancel-safe.
    pub async fn wait(&mut self) -> Result<ExitInfo, SandboxError> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.child.wait().await.map_err(SandboxError::Wait)?;
        let signal = status.signal();
        let code = status.code().unwrap_or_else(|| 128 + signal.unwrap_or(0));
        Ok(ExitInfo {
            code,
            signal: signal.or_else(|| (code > 128 && code < 160).then_some(code - 128)),
            oom_killed: self.oom.fired(),
            duration: self.started.elapsed(),
        })
    }

    /// Sends `signal` to the command's process group, as a terminal's Ctrl-C reaches a job:
    /// the shell running the command and everything it started that did not leave the group.
    /// (bubblewrap's own process, our child, forwards nothing; its child, the namespace's
    /// reaper, leads the group the command runs in.)
    pub fn signal(&self, signal: i32) -> Result<(), SandboxError> {
        let gone = || SandboxError::Signal(std::io::Error::from(std::io::ErrorKind::NotFound));
        let signal = rustix::process::Signal::from_named_raw(signal).ok_or_else(|| {
            SandboxError::Signal(std::io::Error::from(std::io::ErrorKind::InvalidInput))
        })?;
        let root = self.child.id().ok_or_else(gone)?;
        let group = process_group_below(root).ok_or_else(gone)?;
        let group = rustix::process::Pid::from_raw(group).ok_or_else(gone)?;
        rustix::process::kill_process_group(group, signal)
            .map_err(|e| SandboxError::Signal(e.into()))
    }

    /// Kills the whole tree: SIGKILL to the sandbox's supervisor tears down its pid namespace,
    /// taking daemonised and `setsid` children with it.
    pub fn kill(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The process group of the first child of `parent` (read from `/proc`, which needs no
/// kernel option, unlike `/proc/<pid>/task/<tid>/children`).
fn process_group_below(parent: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        entry.file_name().to_str()?.parse::<u32>().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let (ppid, pgrp) = (fields.get(1)?.parse::<u32>().ok()?, fields.get(2)?.parse().ok()?);
        (ppid == parent).then_some(pgrp)
    })
}
