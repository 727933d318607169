//! The default backend: bubblewrap (`bwrap`) driven from Rust.
//!
//! Each exec gets new user, pid, mount, ipc, uts and cgroup namespaces and joins its sandbox's
//! network namespace (only `lo`, shared by the sandbox's execs); a read-only view of the
//! host's `/usr` and a minimal `/etc`, the workspace read-write at `/sandbox`, a private
//! size-limited `/tmp`, a minimal `/dev`, a fresh `/proc`, no `/sys`, no capabilities and
//! no-new-privs (bubblewrap always sets it).

use std::ffi::OsString;
use std::fs;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::process::Resource;

use crate::cgroup::{Cgroups, OomWatch};
use crate::net::{SandboxNetworks, channel, receive_listener};
use crate::seccomp::SeccompPrograms;
use crate::sys::{ChildSetup, FreshNamespaces, NetworkSetup, install};
use crate::{
    Backend, BackendInfo, ExecSpec, INIT_IN_SANDBOX, Network, Process, SANDBOX_MOUNT, SandboxError,
    SandboxSpec, WRITABLE,
};

/// The uid and gid sandboxed code runs as, inside its user namespace.
const SANDBOX_UID: u32 = 1000;
/// Directory (on the sandbox's private root) holding convenience aliases such as `python`.
const ALIAS_DIR: &str = "/opt/petri/bin";
const PATH: &str = "/opt/petri/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:\
                    /usr/sbin:/usr/bin:/sbin:/bin";
/// Entries of the host's `/etc` that runtimes need; everything else stays hidden.
const ETC_ENTRIES: &[&str] = &[
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "ssl",
    "pki",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "protocols",
    "services",
    "maven",
    "nsswitch.conf",
];
/// Top-level directories that are symlinks into `/usr` on merged-usr hosts.
const ROOT_LINKS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];
/// Variables naming CA bundles, forwarded so TLS keeps working behind re-signing proxies.
pub const CA_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];

/// Settings of the bubblewrap backend.
#[derive(Debug, Clone)]
pub struct BwrapConfig {
    /// The `bwrap` executable.
    pub binary: PathBuf,
    /// Server-owned directory for generated files (`passwd`, `group`, `hosts`).
    pub runtime_dir: PathBuf,
    /// Size of each exec's private `/tmp`.
    pub tmp_size_bytes: u64,
    /// Extra host paths bound read-only at the same place (e.g. a toolchain under `/opt`).
    pub extra_ro_paths: Vec<PathBuf>,
    /// Environment every exec gets on top of the base (CA bundle variables and the like).
    pub base_env: Vec<(String, String)>,
    /// Host files (installer binaries such as `uv`) mounted read-only at a sandbox path.
    pub tools: Vec<(PathBuf, String)>,
    /// The `petri` binary, started as every exec's first process to apply Landlock; `None`
    /// where the kernel has no Landlock.
    pub landlock_init: Option<PathBuf>,
    pub cgroups: Cgroups,
}

/// The bubblewrap backend.
#[derive(Debug)]
pub struct BwrapBackend {
    config: BwrapConfig,
    version: String,
    /// Fixed part of the argument vector, computed once.
    base_args: Vec<OsString>,
    /// The syscall filters every exec runs under.
    seccomp: SeccompPrograms,
    /// Generated `/etc` files (`passwd`, `group`, `hosts`): sandbox path and content.
    etc_files: Vec<(String, Vec<u8>)>,
    /// Each sandbox's own network namespace, shared by its execs.
    networks: SandboxNetworks,
}

fn runtime_err(path: &Path) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Runtime {
        path: path.to_path_buf(),
        source,
    }
}

impl BwrapBackend {
    /// Checks that bubblewrap works on this host and prepares the generated files.
    pub fn new(config: BwrapConfig) -> Result<Self, SandboxError> {
        let binary = config.binary.clone();
        let unavailable = move |reason: String| SandboxError::BwrapUnavailable {
            binary: binary.clone(),
            reason,
        };
        let out = std::process::Command::new(&config.binary)
            .arg("--version")
            .output()
            .map_err(|e| {
                unavailable(format!(
                    "cannot run it: {e} (install the bubblewrap package)"
                ))
            })?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        fs::create_dir_all(&config.runtime_dir).map_err(runtime_err(&config.runtime_dir))?;
        let etc_files = [
            (
                "passwd",
                format!(
                    "sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{SANDBOX_MOUNT}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                ),
            ),
            (
                "group",
                format!("sandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"),
            ),
            (
                "hosts",
                "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n".to_string(),
            ),
        ]
        .into_iter()
        .map(|(name, content)| (format!("/etc/{name}"), content.into_bytes()))
        .collect();
        let base_args = base_args(&config, Path::new("/"));
        let seccomp = crate::seccomp::programs()?;
        let backend = Self {
            seccomp,
            config,
            version,
            base_args,
            etc_files,
            networks: SandboxNetworks::default(),
        };
        backend.smoke_test().map_err(unavailable)?;
        Ok(backend)
    }

    /// Runs `/bin/true` in a sandbox so a host that forbids user namespaces fails at start-up
    /// with a clear message rather than on the first exec.
    fn smoke_test(&self) -> Result<(), String> {
        let mut command = std::process::Command::new(&self.config.binary);
        let inherit = self.probe_args(&mut command).map_err(|e| e.to_string())?;
        command.arg("/bin/true").stdin(Stdio::null());
        install(
            &mut command,
            ChildSetup {
                inherit,
                ..ChildSetup::default()
            },
        );
        let out = command.output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "a test sandbox failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Whether this host lets an exec prepare its own network namespace with a proxy listener
    /// (unprivileged user namespaces allowed): dependency installs need it. Tried for real.
    pub fn supports_registry_network(&self) -> bool {
        let probe = || -> Result<bool, SandboxError> {
            let (ours, childs) = channel()?;
            let mut command = std::process::Command::new(&self.config.binary);
            command.arg("--share-net");
            let inherit = self
                .probe_args(&mut command)
                .map_err(SandboxError::Network)?;
            command
                .arg("/bin/true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            install(
                &mut command,
                ChildSetup {
                    inherit,
                    network: Some(NetworkSetup::Proxy {
                        fresh: FreshNamespaces::new(None),
                        port: 0,
                        channel: childs,
                    }),
                    ..ChildSetup::default()
                },
            );
            let status = command.status().map_err(SandboxError::Network)?;
            receive_listener(&ours)?;
            Ok(status.success())
        };
        match probe() {
            Ok(works) => works,
            Err(e) => {
                tracing::warn!(error = %e, "the registry network profile is unavailable");
                false
            }
        }
    }

    /// Arguments of a start-up probe: the base set and an empty workspace. Returns the
    /// descriptors the probe must inherit.
    fn probe_args(&self, command: &mut std::process::Command) -> std::io::Result<Vec<OwnedFd>> {
        let probe_dir = self.config.runtime_dir.join("probe");
        fs::create_dir_all(&probe_dir)?;
        let mut args = self.base_args.clone();
        let mut inherit = Vec::new();
        self.private_binds(&probe_dir, &mut args, &mut inherit)?;
        command.args(args);
        Ok(inherit)
    }

    /// Binds whose sources are the server's own: the generated `/etc` files go in as data
    /// (bubblewrap may run as a sandbox's unprivileged uid, which cannot read the server's
    /// files), then tool binaries and the workspace, then the read-only remount of `/`.
    fn private_binds(
        &self,
        workspace: &Path,
        args: &mut Vec<OsString>,
        inherit: &mut Vec<OwnedFd>,
    ) -> std::io::Result<()> {
        for (inside, content) in &self.etc_files {
            let data = bytes_pipe(content)?;
            args.extend([
                "--ro-bind-data".into(),
                data.as_raw_fd().to_string().into(),
                inside.into(),
            ]);
            inherit.push(data);
        }
        for (host, inside) in &self.config.tools {
            args.extend(["--ro-bind".into(), host.into(), inside.into()]);
        }
        if let Some(init) = &self.config.landlock_init {
            args.extend(["--ro-bind".into(), init.into(), INIT_IN_SANDBOX.into()]);
        }
        args.extend([
            "--bind".into(),
            workspace.into(),
            SANDBOX_MOUNT.into(),
            "--chdir".into(),
            SANDBOX_MOUNT.into(),
            "--remount-ro".into(),
            "/".into(),
        ]);
        Ok(())
    }

    fn rlimits(&self, sandbox: &SandboxSpec) -> Vec<(Resource, u64)> {
        // No single file may outgrow the workspace's disk limit (the only disk limit where
        // quotas are unavailable, and harmless where they work).
        let mut limits = vec![
            (Resource::Core, 0),
            (Resource::Fsize, sandbox.limits.disk_bytes),
        ];
        if matches!(
            self.config.cgroups.mode(),
            crate::CgroupMode::Unavailable { .. }
        ) {
            // Degraded mode: per-process data size and a per-uid process count are the best
            // the kernel offers without a cgroup.
            limits.push((Resource::Data, sandbox.limits.memory_bytes));
            limits.push((Resource::Nproc, sandbox.limits.pids));
        }
        limits
    }
}

/// Mounts and settings shared by every exec. `host_root` lets tests probe a fake host.
fn base_args(config: &BwrapConfig, host_root: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&str]| args.extend(parts.iter().map(OsString::from));
    push(&[
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
    ]);
    for name in ROOT_LINKS {
        let host = host_root.join(name);
        match fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = fs::read_link(&host) {
                    args.extend(["--symlink".into(), target.into(), format!("/{name}").into()]);
                }
            }
            Ok(meta) if meta.is_dir() => {
                let path = format!("/{name}");
                args.extend(["--ro-bind".into(), path.clone().into(), path.into()]);
            }
            _ => {}
        }
    }
    let mut etc: Vec<String> = ETC_ENTRIES.iter().map(|e| format!("/etc/{e}")).collect();
    if let Ok(entries) = fs::read_dir(host_root.join("etc")) {
        // JDKs keep their security configuration under /etc/java-<version>-openjdk.
        etc.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("java"))
                .map(|n| format!("/etc/{n}")),
        );
    }
    for path in etc {
        args.extend(["--ro-bind-try".into(), path.clone().into(), path.into()]);
    }
    for path in &config.extra_ro_paths {
        args.extend(["--ro-bind-try".into(), path.into(), path.into()]);
    }
    let mut push = |parts: &[&str]| args.extend(parts.iter().map(OsString::from));
    push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]);
    let size = config.tmp_size_bytes.to_string();
    push(&["--size", &size, "--tmpfs", "/tmp", "--dir", ALIAS_DIR]);
    for (alias, target) in [("python", "python3"), ("pip", "pip3")] {
        let usr_bin = host_root.join("usr/bin");
        if !usr_bin.join(alias).exists() && usr_bin.join(target).exists() {
            args.extend([
                "--symlink".into(),
                format!("/usr/bin/{target}").into(),
                format!("{ALIAS_DIR}/{alias}").into(),
            ]);
        }
    }
    let uid = SANDBOX_UID.to_string();
    let mut push = |parts: &[&str]| args.extend(parts.iter().map(OsString::from));
    push(&["--uid", &uid, "--gid", &uid, "--clearenv"]);
    for (key, value) in [
        ("PATH", PATH),
        ("HOME", SANDBOX_MOUNT),
        ("USER", "sandbox"),
        ("LOGNAME", "sandbox"),
        ("LANG", "C.UTF-8"),
        ("TMPDIR", "/tmp"),
        // Output must reach the client as it is printed, not when a buffer fills.
        ("PYTHONUNBUFFERED", "1"),
    ] {
        push(&["--setenv", key, value]);
    }
    for (key, value) in &config.base_env {
        push(&["--setenv", key, value]);
    }
    args
}

/// A pipe holding `args` NUL-separated, for `bwrap --args FD`. The whole list (a few KiB)
/// fits in the pipe buffer, so it is written before bubblewrap starts reading.
fn args_pipe(args: &[OsString]) -> std::io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = Vec::new();
    for arg in args {
        bytes.extend_from_slice(arg.as_bytes());
        bytes.push(0);
    }
    bytes_pipe(&bytes)
}

/// A pipe whose read end yields `bytes` then end-of-file (small payloads only: they must fit
/// the pipe buffer, as nobody reads before the child starts).
fn bytes_pipe(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe()?;
    writer.write_all(bytes)?;
    drop(writer);
    Ok(reader.into())
}

/// `petri-init`'s test-mode arguments; the server's output goes to descriptor `server_fd`.
fn test_args(test: &crate::TestSetup, server_fd: i32) -> Vec<String> {
    let mut args = vec!["--serve".to_string(), test.serve.clone()];
    if let Some(port) = test.ready_port {
        args.extend(["--ready-port".into(), port.to_string()]);
    }
    if let Some(path) = &test.ready_path {
        args.extend(["--ready-path".into(), path.clone()]);
    }
    args.extend([
        "--ready-timeout".into(),
        test.ready_timeout_seconds.to_string(),
        "--server-fd".into(),
        server_fd.to_string(),
    ]);
    args
}

impl Backend for BwrapBackend {
    fn info(&self) -> BackendInfo {
        let limits_mode = self.config.cgroups.mode_name();
        BackendInfo {
            backend: "bwrap",
            version: self.version.clone(),
            limits_mode,
            limits_degraded: limits_mode == "rlimit",
            network: "none (loopback only)",
            namespaces: &["user", "pid", "mount", "ipc", "uts", "cgroup", "net"],
            seccomp: "deny list (resources/seccomp/default.json)",
            landlock: self
                .config
                .landlock_init
                .as_ref()
                .and_then(|_| crate::landlock_abi()),
        }
    }

    fn spawn(&self, sandbox: &SandboxSpec, exec: &ExecSpec) -> Result<Process, SandboxError> {
        let spawn_err = |source| SandboxError::Spawn {
            sandbox_id: sandbox.id.clone(),
            source,
        };
        let (cgroup_procs, oom) = match self.config.cgroups.mode() {
            crate::CgroupMode::Unavailable { .. } => (Vec::new(), OomWatch::none()),
            _ => self
                .config
                .cgroups
                .enter(&sandbox.id, &sandbox.limits)?
                .into_parts(),
        };
        // One pipe for stdout and stderr keeps their relative order, as a terminal shows it.
        let (reader, writer) = std::io::pipe().map_err(spawn_err)?;
        let stderr = writer.try_clone().map_err(spawn_err)?;
        // The sandbox setup goes through `--args FD` rather than argv: argv stays visible in
        // the sandbox as /proc/1/cmdline and would reveal host paths.
        let mut setup: Vec<OsString> = self.base_args.clone();
        setup.extend(
            exec.env
                .iter()
                .flat_map(|(k, v)| ["--setenv".into(), k.into(), v.into()]),
        );
        let mut channel_to_child = None;
        let network = match exec.network {
            // User code joins the sandbox's own network (loopback only), shared by its execs
            // so background servers are reachable; where that cannot be made, each exec
            // keeps the private one bubblewrap creates.
            Network::None => match self.networks.get_or_create(sandbox) {
                Ok(namespaces) => {
                    setup.push("--share-net".into());
                    Some(NetworkSetup::Join(namespaces))
                }
                Err(e) => {
                    tracing::warn!(error = %e, sandbox_id = sandbox.id, "no shared sandbox network; this exec gets a private one");
                    None
                }
            },
            Network::RegistryProxy { port } => {
                let proxy = format!("http://127.0.0.1:{port}");
                for key in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
                    setup.extend(["--setenv".into(), key.into(), proxy.clone().into()]);
                }
                // Keep the namespace the child prepares instead of a fresh, empty one.
                setup.push("--share-net".into());
                let (ours, childs) = channel()?;
                channel_to_child = Some(ours);
                Some(NetworkSetup::Proxy {
                    fresh: FreshNamespaces::new(sandbox.host_uid),
                    port,
                    channel: childs,
                })
            }
        };
        let mut inherit = Vec::new();
        for program in &self.seccomp.programs {
            let fd = bytes_pipe(program).map_err(spawn_err)?;
            setup.extend(["--add-seccomp-fd".into(), fd.as_raw_fd().to_string().into()]);
            inherit.push(fd);
        }
        self.private_binds(&sandbox.workspace, &mut setup, &mut inherit)
            .map_err(spawn_err)?;
        let args_fd = args_pipe(&setup).map_err(spawn_err)?;
        let args_fd_number = args_fd.as_raw_fd().to_string();
        let mut command = std::process::Command::new(&self.config.binary);
        command.args(["--args", &args_fd_number]);
        let mut server_output = None;
        if self.config.landlock_init.is_some() {
            command.arg(INIT_IN_SANDBOX);
            for dir in WRITABLE {
                command.args(["--write", dir]);
            }
            if let Some(test) = &exec.test {
                let (reader, writer) = std::io::pipe().map_err(spawn_err)?;
                let writer = OwnedFd::from(writer);
                command.args(test_args(test, writer.as_raw_fd()));
                inherit.push(writer);
                server_output = Some(reader);
            }
            command.arg("--");
        } else if exec.test.is_some() {
            return Err(spawn_err(std::io::Error::other(
                "test mode needs petri-init, which needs Landlock",
            )));
        }
        command
            .args(["/bin/sh", "-c", &exec.command])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr);
        install(
            &mut command,
            ChildSetup {
                cgroup_procs,
                rlimits: self.rlimits(sandbox),
                inherit: {
                    inherit.push(args_fd);
                    inherit
                },
                network,
                host_uid: sandbox.host_uid,
            },
        );
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let child = command.spawn().map_err(spawn_err)?;
        let proxy_listener = channel_to_child
            .as_ref()
            .map(receive_listener)
            .transpose()?;
        // Dropping the command closes our copies of the write end, so the reader sees EOF
        // once the sandbox's processes are gone.
        drop(command);
        let output =
            tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).map_err(spawn_err)?;
        let server_output = server_output
            .map(|reader| tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()))
            .transpose()
            .map_err(spawn_err)?;
        Ok(Process::new(
            child,
            output,
            oom,
            proxy_listener,
            server_output,
        ))
    }

    fn connect(&self, sandbox: &SandboxSpec, port: u16) -> Result<TcpStream, SandboxError> {
        self.networks.connect(sandbox, port)
    }

    fn destroy(&self, sandbox_id: &str) -> Result<(), SandboxError> {
        self.networks.remove(sandbox_id);
        self.config.cgroups.destroy(sandbox_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(runtime: &Path) -> BwrapConfig {
        BwrapConfig {
            binary: "bwrap".into(),
            runtime_dir: runtime.to_path_buf(),
            tmp_size_bytes: 64 << 20,
            extra_ro_paths: vec!["/opt/toolchain".into()],
            tools: vec![("/srv/uv".into(), "/opt/petri/bin/uv".into())],
            base_env: vec![("SSL_CERT_FILE".into(), "/etc/ssl/certs/ca.crt".into())],
            cgroups: Cgroups::unavailable("test"),
            landlock_init: None,
        }
    }

    fn joined(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn base_args_isolate_everything_and_expose_only_a_minimal_host() {
        let host = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("usr/bin", host.path().join("bin")).unwrap();
        fs::create_dir_all(host.path().join("lib64")).unwrap();
        fs::create_dir_all(host.path().join("etc/java-17-openjdk")).unwrap();
        fs::create_dir_all(host.path().join("usr/bin")).unwrap();
        fs::write(host.path().join("usr/bin/python3"), "").unwrap();
        let args = joined(&base_args(&config(Path::new("/run/petri")), host.path()));
        for expected in [
            "--unshare-all --unshare-user --disable-userns --die-with-parent --new-session",
            "--cap-drop ALL",
            "--ro-bind /usr /usr",
            "--symlink usr/bin /bin",
            "--ro-bind /lib64 /lib64",
            "--ro-bind-try /etc/ssl /etc/ssl",
            "--ro-bind-try /etc/java-17-openjdk /etc/java-17-openjdk",
            "--ro-bind-try /opt/toolchain /opt/toolchain",
            "--proc /proc --dev /dev",
            "--size 67108864 --tmpfs /tmp",
            "--symlink /usr/bin/python3 /opt/petri/bin/python",
            "--clearenv",
            "--setenv PYTHONUNBUFFERED 1",
            "--setenv SSL_CERT_FILE /etc/ssl/certs/ca.crt",
        ] {
            assert!(args.contains(expected), "missing {expected:?} in {args}");
        }
        assert!(
            !args.contains("/sys"),
            "host /sys must never be exposed: {args}"
        );
        assert!(!args.contains("--share-net"));
        assert!(!args.contains("--ro-bind-try /etc/shadow"));
    }

    #[test]
    fn generated_files_go_in_as_data_and_the_workspace_last() {
        let runtime = tempfile::tempdir().unwrap();
        let uv = runtime.path().join("uv");
        fs::write(&uv, "").unwrap();
        let mut config = config(runtime.path());
        config.tools = vec![(uv, "/opt/petri/bin/uv".into())];
        let backend = BwrapBackend {
            base_args: Vec::new(),
            seccomp: crate::seccomp::programs().unwrap(),
            version: String::new(),
            etc_files: vec![("/etc/passwd".into(), b"sandbox:x:1000".to_vec())],
            config,
            networks: SandboxNetworks::default(),
        };
        let (mut args, mut inherit) = (Vec::new(), Vec::new());
        backend
            .private_binds(runtime.path(), &mut args, &mut inherit)
            .unwrap();
        let root = runtime.path().display();
        assert_eq!(
            joined(&args),
            format!(
                "--ro-bind-data {} /etc/passwd --ro-bind {root}/uv /opt/petri/bin/uv --bind {root} /sandbox --chdir /sandbox --remount-ro /",
                inherit[0].as_raw_fd(),
            )
        );
    }
}
