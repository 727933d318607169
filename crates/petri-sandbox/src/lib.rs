//! The isolation layer.
//!
//! A sandbox is a workspace directory plus limits plus its own loopback-only network; every
//! exec is a fresh process tree in new user, pid, mount, ipc, uts and cgroup namespaces that
//! joins the sandbox's network namespace. [`Backend`] is the seam where a
//! microVM or gVisor backend can be added; [`BwrapBackend`] drives bubblewrap.
//!
//! This is the only crate allowed `unsafe`, and all of it lives in `sys.rs`.

mod bwrap;
mod cgroup;
mod disk;
mod error;
mod landlock;
mod net;
mod process;
mod seccomp;
mod sys;
mod testmode;

use std::net::TcpStream;
use std::path::PathBuf;

use serde::Serialize;

pub use bwrap::{BwrapBackend, BwrapConfig, CA_VARIABLES};
pub use cgroup::{CgroupMode, Cgroups};
pub use disk::{DiskMode, DiskQuotas, is_mount_point};
pub use error::SandboxError;
pub use landlock::{INIT_IN_SANDBOX, WRITABLE, confine, confine_and_exec};
pub use process::{ExitInfo, Output, Process};
pub use testmode::{EXIT_SETUP_FAILED, TestPlan, run as run_test_plan};

/// Where the workspace appears inside every sandbox.
pub const SANDBOX_MOUNT: &str = "/sandbox";

/// Resource limits applied to one sandbox (shared by the processes of its execs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Memory (RAM, no swap) in bytes.
    pub memory_bytes: u64,
    /// Maximum number of processes and threads.
    pub pids: u64,
    /// CPU bandwidth in thousandths of a core (1000 = one full core).
    pub cpu_millis: u64,
    /// Disk space of the workspace in bytes (a filesystem of that size where quotas work,
    /// else the largest file a process may write).
    pub disk_bytes: u64,
}

/// What a backend needs to know about a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    pub id: String,
    /// Host directory mounted read-write at [`SANDBOX_MOUNT`].
    pub workspace: PathBuf,
    pub limits: Limits,
    /// The host uid (and gid) the sandbox's processes run as, when the server gives each
    /// sandbox its own (it must be root to); `None`: the server's own uid.
    pub host_uid: Option<u32>,
}

/// What network an exec gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Loopback only: user code.
    #[default]
    None,
    /// Loopback plus a proxy listener on `127.0.0.1:<port>` that the server serves
    /// (dependency installs). `HTTPS_PROXY` and friends point at it.
    RegistryProxy { port: u16 },
}

/// One command to run in a sandbox.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    /// Passed to `/bin/sh -c`.
    pub command: String,
    /// Extra environment on top of the backend's clean base environment.
    pub env: Vec<(String, String)>,
    pub network: Network,
    /// Test mode: a server started first, `command` being the test runner.
    pub test: Option<TestSetup>,
}

/// The server side of a test-mode exec (see `testmode.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSetup {
    /// Passed to `/bin/sh -c`, in the background; its output goes to
    /// [`Process::take_server_output`].
    pub serve: String,
    pub ready_port: Option<u16>,
    pub ready_path: Option<String>,
    pub ready_timeout_seconds: u64,
}

/// The Landlock ABI version this kernel offers, if any.
pub fn landlock_abi() -> Option<i64> {
    sys::landlock_abi()
}

/// How limits are enforced on this host, for `/health` and the start-up line.
#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    pub backend: &'static str,
    pub version: String,
    /// `cgroup-v2`, `cgroup-v1` or `rlimit`.
    pub limits_mode: &'static str,
    /// True when limits fall back to per-process rlimits (no writable cgroup).
    pub limits_degraded: bool,
    pub network: &'static str,
    pub namespaces: &'static [&'static str],
    /// What the syscall filter is.
    pub seccomp: &'static str,
    /// The Landlock ABI every exec is confined with, if any.
    pub landlock: Option<i64>,
}

/// An isolation engine. Implementations must make every exec a fresh, fully isolated process
/// tree that dies as a whole when killed.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// What this backend enforces on this host.
    fn info(&self) -> BackendInfo;
    /// Starts `exec` inside `sandbox`. Must be called from an async task (not a blocking
    /// thread): the child is tied to the lifetime of the spawning thread.
    fn spawn(&self, sandbox: &SandboxSpec, exec: &ExecSpec) -> Result<Process, SandboxError>;
    /// Connects to `127.0.0.1:port` inside the sandbox's network (port preview). The socket
    /// is non-blocking and may still be completing. Blocks for a fork: call off the runtime.
    fn connect(&self, sandbox: &SandboxSpec, port: u16) -> Result<TcpStream, SandboxError>;
    /// Kills every process of the sandbox and releases its kernel resources (cgroups).
    /// The workspace directory is the caller's business.
    fn destroy(&self, sandbox_id: &str) -> Result<(), SandboxError>;
}
