//! Command-line flags, each with its `PETRI_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use petri_engine::EngineConfig;
use petri_sandbox::Limits;

const MIB: u64 = 1 << 20;

/// Settings of `petri serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PETRI_BIND", default_value = "127.0.0.1:8000")]
    pub bind: SocketAddr,
    /// Directory holding all state (default: /var/lib/petri as root, else ~/.petri).
    #[arg(long, env = "PETRI_WORKSPACE_ROOT")]
    pub workspace_root: Option<PathBuf>,
    /// Idle seconds before a sandbox is soft-deleted.
    #[arg(long, env = "PETRI_SANDBOX_TTL_SECONDS", default_value_t = 3600)]
    pub sandbox_ttl_seconds: u64,
    /// Seconds between TTL sweeps.
    #[arg(long, env = "PETRI_SWEEP_INTERVAL_SECONDS", default_value_t = 60)]
    pub sweep_interval_seconds: u64,
    /// Total MiB of run output kept; the oldest outputs are evicted beyond it.
    #[arg(long, env = "PETRI_LOG_MAX_MB", default_value_t = 500)]
    pub log_max_mb: u64,
    /// Default per-exec timeout in seconds.
    #[arg(long, env = "PETRI_EXEC_TIMEOUT_SECONDS", default_value_t = 300)]
    pub exec_timeout_seconds: u64,
    /// Largest timeout an exec may request, in seconds.
    #[arg(long, env = "PETRI_EXEC_TIMEOUT_MAX_SECONDS", default_value_t = 3600)]
    pub exec_timeout_max_seconds: u64,
    /// MiB of output streamed and stored per run.
    #[arg(long, env = "PETRI_OUTPUT_MAX_MB", default_value_t = 10)]
    pub output_max_mb: u64,
    /// Largest upload (file or zip) in MiB.
    #[arg(long, env = "PETRI_MAX_UPLOAD_MB", default_value_t = 100)]
    pub max_upload_mb: u64,
    /// Most entries in one zip upload.
    #[arg(long, env = "PETRI_ZIP_MAX_ENTRIES", default_value_t = 10_000)]
    pub zip_max_entries: usize,
    /// Most uncompressed MiB in one zip upload.
    #[arg(long, env = "PETRI_ZIP_MAX_MB", default_value_t = 1024)]
    pub zip_max_mb: u64,
    /// Default memory limit of a sandbox in MiB.
    #[arg(long, env = "PETRI_MEMORY_MB", default_value_t = 512)]
    pub memory_mb: u64,
    /// Default process/thread limit of a sandbox.
    #[arg(long, env = "PETRI_PIDS_MAX", default_value_t = 256)]
    pub pids_max: u64,
    /// Default CPU limit of a sandbox, in cores.
    #[arg(long, env = "PETRI_CPUS", default_value_t = 1.0)]
    pub cpus: f64,
    /// Largest memory limit a client may request, in MiB.
    #[arg(long, env = "PETRI_MAX_MEMORY_MB", default_value_t = 8192)]
    pub max_memory_mb: u64,
    /// Largest process limit a client may request.
    #[arg(long, env = "PETRI_MAX_PIDS", default_value_t = 4096)]
    pub max_pids: u64,
    /// Largest CPU limit a client may request, in cores.
    #[arg(long, env = "PETRI_MAX_CPUS", default_value_t = 8.0)]
    pub max_cpus: f64,
    /// Default disk space of a sandbox's workspace in MiB (a sparse filesystem of that size
    /// when the server is root; else the largest file a process may write).
    #[arg(long, env = "PETRI_DISK_MB", default_value_t = 1024)]
    pub disk_mb: u64,
    /// Largest disk space a client may request, in MiB.
    #[arg(long, env = "PETRI_MAX_DISK_MB", default_value_t = 10_240)]
    pub max_disk_mb: u64,
    /// Size of each exec's private /tmp in MiB.
    #[arg(long, env = "PETRI_TMP_MB", default_value_t = 256)]
    pub tmp_mb: u64,
    /// Execs that may wait behind a running one in the same sandbox.
    #[arg(long, env = "PETRI_EXEC_QUEUE_MAX", default_value_t = 8)]
    pub exec_queue_max: usize,
    /// Background processes one sandbox may run at once.
    #[arg(long, env = "PETRI_BACKGROUND_MAX", default_value_t = 8)]
    pub background_max: usize,
    /// Execs running at once across all sandboxes (more wait their turn).
    #[arg(long, env = "PETRI_MAX_RUNNING_EXECS", default_value_t = 32)]
    pub max_running_execs: usize,
    /// Seconds between keepalive comments on a quiet exec stream.
    #[arg(long, env = "PETRI_KEEPALIVE_SECONDS", default_value_t = 15)]
    pub keepalive_seconds: u64,
    /// The bubblewrap executable.
    #[arg(long, env = "PETRI_BWRAP", default_value = "bwrap")]
    pub bwrap: PathBuf,
    /// Extra host paths mounted read-only into sandboxes (colon-separated), e.g. toolchains under /opt.
    #[arg(long, env = "PETRI_EXTRA_RO_PATHS", value_delimiter = ':')]
    pub extra_ro_paths: Vec<PathBuf>,
    /// Hosts dependency installs may reach (comma-separated `host`, `host:port`, `*.suffix`).
    #[arg(long, env = "PETRI_EGRESS_ALLOW", default_value = petri_engine::DEFAULT_EGRESS_ALLOWLIST)]
    pub egress_allow: String,
    /// Let allowlisted names resolve to private or loopback addresses (a mirror on the LAN).
    #[arg(long, env = "PETRI_EGRESS_ALLOW_PRIVATE", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub egress_allow_private: bool,
    /// The `uv` binary used for Python installs (default: `uv` on PATH; `none` or no uv: pip).
    #[arg(long, env = "PETRI_UV")]
    pub uv: Option<PathBuf>,
    /// The `gradle` used for `build.gradle` projects (default: `/usr/bin/gradle` when present;
    /// `none`: no Gradle). It runs inside sandboxes, so it must live under `/usr` or one of
    /// `PETRI_EXTRA_RO_PATHS`.
    #[arg(long, env = "PETRI_GRADLE")]
    pub gradle: Option<PathBuf>,
    /// An HTTP proxy (`host:port`) all registry traffic must go through, e.g. a corporate one.
    #[arg(long, env = "PETRI_EGRESS_UPSTREAM")]
    pub egress_upstream: Option<String>,
    /// Size of the shared package cache in MiB (least recently used files are evicted).
    #[arg(long, env = "PETRI_PACKAGE_CACHE_MB", default_value_t = 10_240)]
    pub package_cache_mb: u64,
    /// Do not run the shared PyPI and npm mirror (installs then reach the registries through
    /// the CONNECT proxy only, and every sandbox downloads for itself).
    #[arg(long, env = "PETRI_NO_PACKAGE_MIRROR", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub no_package_mirror: bool,
    /// Host names (`host` or `host:port`) the `/mcp` endpoint answers besides loopback ones,
    /// comma-separated: set it when agents reach the server under another name.
    #[arg(long, env = "PETRI_MCP_ALLOWED_HOSTS", value_delimiter = ',')]
    pub mcp_allowed_hosts: Vec<String>,
    /// Port previews by host name: `{port}-{sandbox id}.{this}` (each an origin of its own in
    /// a browser). `localhost` works without DNS (browsers resolve `*.localhost` to loopback);
    /// point a wildcard DNS name at the server for remote use. Empty: path-based previews only.
    #[arg(long, env = "PETRI_PREVIEW_HOST", default_value = "localhost")]
    pub preview_host: String,
    /// Longest a dependency install may take, in seconds.
    #[arg(long, env = "PETRI_INSTALL_TIMEOUT_SECONDS", default_value_t = 600)]
    pub install_timeout_seconds: u64,
    /// First host uid given to sandboxes when the server runs as root (each sandbox gets the
    /// next one, never reused). Pick a range no real user or container runtime uses.
    #[arg(long, env = "PETRI_SANDBOX_UID_BASE", default_value_t = 1_000_000_000)]
    pub sandbox_uid_base: u32,
    /// Use per-process rlimits even where cgroups are writable.
    #[arg(long, env = "PETRI_DISABLE_CGROUPS", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub disable_cgroups: bool,
}

fn cpu_millis(cores: f64) -> Result<u64, String> {
    if cores.is_finite() && cores > 0.0 {
        Ok((cores * 1000.0).round() as u64)
    } else {
        Err(format!(
            "CPU limit {cores} must be a positive number of cores"
        ))
    }
}

impl ServeArgs {
    pub fn root(&self) -> Result<PathBuf, String> {
        match &self.workspace_root {
            Some(root) => Ok(root.clone()),
            // A system service's state lives where every sandbox uid can traverse to its own
            // workspace (root's home is closed to them).
            None if rustix::process::geteuid().is_root() => Ok(PathBuf::from(ROOT_STATE_DIR)),
            None => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".petri"))
                .ok_or_else(|| {
                    "HOME is not set; pass --workspace-root or PETRI_WORKSPACE_ROOT".to_string()
                }),
        }
    }

    pub fn engine_config(&self) -> Result<EngineConfig, String> {
        if self.exec_timeout_seconds == 0
            || self.exec_timeout_seconds > self.exec_timeout_max_seconds
        {
            return Err(format!(
                "PETRI_EXEC_TIMEOUT_SECONDS ({}) must be between 1 and PETRI_EXEC_TIMEOUT_MAX_SECONDS ({})",
                self.exec_timeout_seconds, self.exec_timeout_max_seconds
            ));
        }
        if self.sweep_interval_seconds == 0 {
            return Err("PETRI_SWEEP_INTERVAL_SECONDS must be at least 1".into());
        }
        let mut config = EngineConfig::with_root(self.root()?);
        config.sandbox_ttl = Duration::from_secs(self.sandbox_ttl_seconds);
        config.sweep_interval = Duration::from_secs(self.sweep_interval_seconds);
        config.exec_timeout_default = Duration::from_secs(self.exec_timeout_seconds);
        config.exec_timeout_max = Duration::from_secs(self.exec_timeout_max_seconds);
        config.output_max_bytes = self.output_max_mb * MIB;
        config.log_max_bytes = self.log_max_mb * MIB;
        config.upload_max_bytes = self.max_upload_mb * MIB;
        config.zip_max_entries = self.zip_max_entries;
        config.zip_max_bytes = self.zip_max_mb * MIB;
        config.default_limits = Limits {
            memory_bytes: self.memory_mb * MIB,
            pids: self.pids_max,
            cpu_millis: cpu_millis(self.cpus)?,
            disk_bytes: self.disk_mb * MIB,
        };
        config.max_limits = Limits {
            memory_bytes: self.max_memory_mb * MIB,
            pids: self.max_pids,
            cpu_millis: cpu_millis(self.max_cpus)?,
            disk_bytes: self.max_disk_mb * MIB,
        };
        config.exec_queue_max = self.exec_queue_max;
        config.max_running_execs = self.max_running_execs;
        config.background_max = self.background_max.max(1);
        config.install_timeout = Duration::from_secs(self.install_timeout_seconds.max(1));
        // Switching a sandbox to its own uid needs root, and a state directory whose parents
        // other users may traverse (bubblewrap then runs as that uid); otherwise sandboxes
        // share the server's uid and /health says so.
        if rustix::process::geteuid().is_root() {
            if self.sandbox_uid_base < 65_536 {
                return Err(format!(
                    "PETRI_SANDBOX_UID_BASE {} is in the range of real users; pick one above 65535",
                    self.sandbox_uid_base
                ));
            }
            match closed_ancestor(&config.root) {
                None => config.host_uid_base = Some(self.sandbox_uid_base),
                Some(dir) => tracing::warn!(
                    closed = %dir.display(),
                    "identities degraded: sandboxes run as root's uid because other users cannot traverse this parent of the state directory (use a root under /var/lib, or chmod o+x it)"
                ),
            }
        }
        Ok(config)
    }
}

/// Where a root server keeps its state by default.
const ROOT_STATE_DIR: &str = "/var/lib/petri";

/// The first existing parent of `root` that other users may not traverse, if any.
fn closed_ancestor(root: &std::path::Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    root.ancestors().skip(1).find_map(|dir| {
        let mode = std::fs::metadata(dir).ok()?.permissions().mode();
        (mode & 0o001 == 0).then(|| dir.to_path_buf())
    })
}
