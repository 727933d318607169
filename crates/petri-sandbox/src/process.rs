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

    /// Sends `signal` to every process of the command, the way `kill` would reach the
    /// program the user started: the shell Petri wraps the command in (`/bin/sh -c`) is left
    /// out while it waits for a child and has no `trap` for the signal, so it ends with the
    /// child's exit code (a shell killed first would take the namespace down before the
    /// program could shut down gracefully). bubblewrap's own processes are left out too.
    pub fn signal(&self, signal: i32) -> Result<(), SandboxError> {
        let gone = || SandboxError::Signal(std::io::Error::from(std::io::ErrorKind::NotFound));
        let signal = rustix::process::Signal::from_named_raw(signal).ok_or_else(|| {
            SandboxError::Signal(std::io::Error::from(std::io::ErrorKind::InvalidInput))
        })?;
        let root = self.child.id().ok_or_else(gone)?;
        let table = process_table();
        let children = |parent: u32| {
            table
                .iter()
                .filter(move |p| p.ppid == parent)
                .map(|p| p.pid)
        };
        // bubblewrap → its reaper (pid 1 of the namespace) → the wrapping shell → ...
        let reaper = children(root).next().ok_or_else(gone)?;
        let mut targets = Vec::new();
        let mut frontier: Vec<u32> = children(reaper).collect();
        while let Some(pid) = frontier.pop() {
            targets.push(pid);
            frontier.extend(children(pid));
        }
        let wrapper = table
            .iter()
            .find(|p| p.ppid == reaper && matches!(p.comm.as_str(), "sh" | "dash"));
        // The wrapping shell gets the signal only when it would do something with it (a
        // `trap`) or is all there is; a shell that would simply die must not end the exec
        // under its still-running program.
        if let Some(wrapper) = wrapper
            && children(wrapper.pid).next().is_some()
            && !catches(wrapper.pid, signal.as_raw())
        {
            targets.retain(|pid| *pid != wrapper.pid);
        }
        if targets.is_empty() {
            return Err(gone());
        }
        for pid in targets {
            let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
                continue;
            };
            // A process may exit between the scan and the signal; that is not a failure.
            match rustix::process::kill_process(pid, signal) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(SandboxError::Signal(e.into())),
            }
        }
        Ok(())
    }

    /// Kills the whole tree. SIGKILL to the namespace's first process (bubblewrap's reaper,
    /// pid 1 inside) makes the kernel kill everything in the pid namespace, daemonised and
    /// `setsid` processes included; then bubblewrap itself goes. Killing bubblewrap alone is
    /// not enough: its reaper's parent-death signal does not always survive the credential
    /// changes bubblewrap makes (seen: a reaper left running with a `trap ''` shell under it).
    pub fn kill(&mut self) {
        if let Some(root) = self.child.id() {
            let reapers = process_table().into_iter().filter(|p| p.ppid == root);
            for reaper in reapers {
                if let Some(pid) = rustix::process::Pid::from_raw(reaper.pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Whatever ended supervision early (a panic, a dropped task), nothing may outlive it.
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// Whether process `pid` has a handler for `signal` (bit `signal - 1` of `SigCgt` in
/// `/proc/<pid>/status`).
fn catches(pid: u32, signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| (1..=64).contains(&signal) && mask & (1 << (signal - 1)) != 0)
}

/// One line of the host's process table.
#[derive(Debug)]
struct ProcessEntry {
    pid: u32,
    ppid: u32,
    comm: String,
}

/// Every process of the host, from `/proc/<pid>/stat` (which, unlike
/// `/proc/<pid>/task/<tid>/children`, needs no kernel option).
fn process_table() -> Vec<ProcessEntry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The command name may hold spaces and parentheses: it ends at the last ')'.
            let (head, tail) = stat.rsplit_once(')')?;
            let comm = head.split_once('(')?.1.to_string();
            let ppid = tail.split_whitespace().nth(1)?.parse().ok()?;
            Some(ProcessEntry { pid, ppid, comm })
        })
        .collect()
}
