use std::path::PathBuf;

/// Failures of the isolation layer.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("bubblewrap is not usable ({binary}): {reason}")]
    BwrapUnavailable { binary: PathBuf, reason: String },
    #[error("cannot spawn sandbox process for {sandbox_id}: {source}")]
    Spawn {
        sandbox_id: String,
        source: std::io::Error,
    },
    #[error("cgroup operation on {path} failed: {source}")]
    Cgroup {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot prepare sandbox runtime files in {path}: {source}")]
    Runtime {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot prepare the sandbox's registry-only network (needs root): {0}")]
    Network(std::io::Error),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("disk quota: {what} failed: {source}")]
    Disk {
        what: String,
        source: std::io::Error,
    },
    #[error("nothing listens on port {port} in sandbox {sandbox_id}")]
    PortClosed { sandbox_id: String, port: u16 },
    #[error("cannot signal the sandbox process: {0}")]
    Signal(std::io::Error),
    #[error("waiting for sandbox process failed: {0}")]
    Wait(std::io::Error),
}
