//! `petri serve`: wire the backend, engine and HTTP layer together and run until a signal.

use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use petri_api::{AppState, router};
use petri_engine::{
    Allowlist, EgressProxy, Engine, GO_MIRROR_PROXY, MAVEN_MIRROR_REPOSITORY, MirroredRegistries,
    NPM_MIRROR_REGISTRY, PYPI_MIRROR_INDEX, RegistryMirror, Toolbox,
};
use petri_sandbox::{BwrapBackend, BwrapConfig, CA_VARIABLES, Cgroups, DiskQuotas};

use crate::config::ServeArgs;

/// The default CA bundle, passed to sandboxes when the server's environment names none.
const DEFAULT_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// CA bundle variables for sandboxes: the server's own values where they point under `/etc`
/// (the only host tree sandboxes see), else the system bundle.
fn ca_environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = CA_VARIABLES
        .iter()
        .filter_map(|key| {
            let value = std::env::var(key).ok()?;
            (value.starts_with("/etc/") || value.starts_with("/usr/"))
                .then(|| (key.to_string(), value))
        })
        .collect();
    if env.is_empty() && std::path::Path::new(DEFAULT_CA_FILE).exists() {
        env = CA_VARIABLES
            .iter()
            .filter(|key| **key != "SSL_CERT_DIR")
            .map(|key| (key.to_string(), DEFAULT_CA_FILE.to_string()))
            .collect();
    }
    env
}

/// Where the `uv` binary appears inside sandboxes.
const UV_IN_SANDBOX: &str = "/opt/petri/bin/uv";

/// The `uv` to mount into sandboxes: `PETRI_UV` (`none`: use pip), else the first `uv` on
/// PATH.
fn find_uv(args: &ServeArgs) -> Result<Option<std::path::PathBuf>, String> {
    match &args.uv {
        Some(uv) if uv.as_os_str() == "none" => Ok(None),
        Some(uv) if uv.is_file() => Ok(Some(uv.clone())),
        Some(uv) => Err(format!("PETRI_UV {} is not a file", uv.display())),
        None => Ok(std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("uv"))
                .find(|candidate| candidate.is_file())
        })),
    }
}

/// Where Gradle is found when `PETRI_GRADLE` is not set (Debian's package puts it here).
const DEFAULT_GRADLE: &str = "/usr/bin/gradle";

/// The `gradle` sandboxes run for `build.gradle` projects: `PETRI_GRADLE` (`none`: none),
/// else the distribution's, when installed.
fn find_gradle(args: &ServeArgs) -> Result<Option<String>, String> {
    let visible = |path: &std::path::Path| {
        path.starts_with("/usr") || args.extra_ro_paths.iter().any(|dir| path.starts_with(dir))
    };
    match &args.gradle {
        Some(gradle) if gradle.as_os_str() == "none" => Ok(None),
        Some(gradle) if !gradle.is_file() => {
            Err(format!("PETRI_GRADLE {} is not a file", gradle.display()))
        }
        Some(gradle) if !visible(gradle) => Err(format!(
            "PETRI_GRADLE {} is not visible in sandboxes: it must be under /usr or PETRI_EXTRA_RO_PATHS",
            gradle.display()
        )),
        Some(gradle) => Ok(Some(gradle.display().to_string())),
        None => Ok(std::path::Path::new(DEFAULT_GRADLE)
            .is_file()
            .then(|| DEFAULT_GRADLE.to_string())),
    }
}

/// A copy of `tool` that bubblewrap can bind when it runs as a sandbox's own uid: the
/// original may sit below a directory only root may traverse (a checkout under `/root`).
/// The copy lives in `<root>/tools`, traverse-only, and is refreshed when the original changes.
fn stage_tool(
    tool: &std::path::Path,
    root: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let fail =
        |what: &str, e: std::io::Error| format!("cannot stage {} ({what}): {e}", tool.display());
    let dir = root.join("tools");
    std::fs::create_dir_all(&dir).map_err(|e| fail("directory", e))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711))
        .map_err(|e| fail("directory mode", e))?;
    let name = tool
        .file_name()
        .ok_or_else(|| format!("{} has no file name", tool.display()))?;
    let staged = dir.join(name);
    let source = std::fs::metadata(tool).map_err(|e| fail("original", e))?;
    let fresh = std::fs::metadata(&staged).is_ok_and(|copy| {
        copy.len() == source.len() && copy.modified().ok() == source.modified().ok()
    });
    if !fresh {
        let temp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
        std::fs::copy(tool, &temp).map_err(|e| fail("copy", e))?;
        let copy = std::fs::File::options()
            .write(true)
            .open(&temp)
            .map_err(|e| fail("copy", e))?;
        if let Ok(modified) = source.modified() {
            copy.set_modified(modified)
                .map_err(|e| fail("copy time", e))?;
        }
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| fail("copy mode", e))?;
        std::fs::rename(&temp, &staged).map_err(|e| fail("rename", e))?;
    }
    Ok(staged)
}

fn build_backend(
    args: &ServeArgs,
    runtime_dir: std::path::PathBuf,
    uv: Option<&std::path::Path>,
    landlock_init: Option<std::path::PathBuf>,
) -> Result<BwrapBackend, String> {
    let cgroups = if args.disable_cgroups {
        Cgroups::unavailable("disabled by PETRI_DISABLE_CGROUPS")
    } else {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Cgroups::detect(std::path::Path::new("/sys/fs/cgroup"), &own)
    };
    if let petri_sandbox::CgroupMode::Unavailable { reason } = cgroups.mode() {
        tracing::warn!(%reason, "limits degraded: no writable cgroup, falling back to rlimits");
    }
    BwrapBackend::new(BwrapConfig {
        binary: args.bwrap.clone(),
        runtime_dir,
        tmp_size_bytes: args.tmp_mb << 20,
        extra_ro_paths: args.extra_ro_paths.clone(),
        base_env: ca_environment(),
        tools: uv
            .map(|uv| (uv.to_path_buf(), UV_IN_SANDBOX.to_string()))
            .into_iter()
            .collect(),
        landlock_init,
        cgroups,
    })
    .map_err(|e| e.to_string())
}

/// The registry proxy, when this host can give installs their own network namespace, with
/// the PyPI mirror when PyPI is allowed and the mirror not disabled.
fn build_egress(
    args: &ServeArgs,
    backend: &BwrapBackend,
    cache_dir: std::path::PathBuf,
) -> Result<Option<EgressProxy>, String> {
    let mut allowlist = Allowlist::parse(&args.egress_allow).map_err(|e| e.to_string())?;
    allowlist.allow_private = args.egress_allow_private;
    if backend.supports_registry_network() {
        let registries = MirroredRegistries {
            pypi: allowlist.allows("pypi.org", 443)
                && allowlist.allows("files.pythonhosted.org", 443),
            npm: allowlist.allows("registry.npmjs.org", 443),
            go: allowlist.allows("proxy.golang.org", 443),
            maven: allowlist.allows("repo.maven.apache.org", 443),
        };
        let mut proxy = EgressProxy::new(allowlist);
        if let Some(upstream) = &args.egress_upstream {
            proxy = proxy.with_upstream(upstream)?;
        }
        if registries != MirroredRegistries::default() && !args.no_package_mirror {
            let mirror = RegistryMirror::new(
                cache_dir,
                args.egress_upstream.as_deref(),
                args.package_cache_mb << 20,
                registries,
            )
            .map_err(|e| format!("cannot prepare the package mirror cache: {e}"))?;
            proxy = proxy.with_mirror(mirror);
        }
        Ok(Some(proxy))
    } else {
        tracing::warn!("dependency installs unavailable: creating a network namespace needs root");
        Ok(None)
    }
}

pub fn run(args: ServeArgs) -> Result<(), String> {
    let config = args.engine_config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let uv = find_uv(&args)?;
        let mut config = config;
        config.toolbox = Toolbox {
            uv: uv.as_ref().map(|_| UV_IN_SANDBOX.to_string()),
            gradle: find_gradle(&args)?,
            ..Toolbox::default()
        };
        let uv = match uv {
            Some(uv) if config.host_uid_base.is_some() => Some(stage_tool(&uv, &config.root)?),
            other => other,
        };
        // This very binary confines each exec with Landlock, where the kernel has it.
        let landlock_init = match petri_sandbox::landlock_abi() {
            None => {
                tracing::warn!("Landlock unavailable: sandboxes rely on their mounts alone");
                None
            }
            Some(_) => {
                let init = std::env::current_exe()
                    .map_err(|e| format!("cannot find the petri binary: {e}"))?
                    .with_file_name("petri-init");
                if !init.is_file() {
                    return Err(format!(
                        "{} is missing: it is built and installed next to petri",
                        init.display()
                    ));
                }
                Some(match config.host_uid_base {
                    Some(_) => stage_tool(&init, &config.root)?,
                    None => init,
                })
            }
        };
        let backend = build_backend(&args, config.runtime_dir(), uv.as_deref(), landlock_init)?;
        let egress = build_egress(&args, &backend, config.root.join("cache").join("packages"))?;
        if let Some(mirror) = egress.as_ref().and_then(EgressProxy::mirror) {
            let mirrored = mirror.registries();
            let url = |on: bool, url: &str| on.then(|| url.to_string());
            config.toolbox.pypi_index = url(mirrored.pypi, PYPI_MIRROR_INDEX);
            config.toolbox.npm_registry = url(mirrored.npm, NPM_MIRROR_REGISTRY);
            config.toolbox.go_proxy = url(mirrored.go, GO_MIRROR_PROXY);
            config.toolbox.maven_repository = url(mirrored.maven, MAVEN_MIRROR_REPOSITORY);
        }
        let disks = if args.disk_mb == 0 {
            DiskQuotas::unavailable(config.root.join("disks"), "disabled by PETRI_DISK_MB=0")
        } else {
            DiskQuotas::detect(config.root.join("disks"))
        };
        if let petri_engine::DiskMode::Unavailable { reason } = disks.mode() {
            tracing::warn!(%reason, "disk degraded: no per-sandbox filesystem, only file sizes are capped");
        }
        let engine = Engine::start(config, Arc::new(backend), egress, disks)
            .map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.bind))?;
        let listen = listener
            .local_addr()
            .map_err(|e| format!("cannot read the listening address: {e}"))?;
        let info = engine.info();
        let limits = info.default_limits;
        // The one line an operator (and the test harness) reads to know where we are.
        println!(
            "petri listening on http://{listen} | isolation: {} {} ({} namespaces, seccomp, network {}) | limits: {}{} memory={}MiB pids={} cpus={} timeout={}s | root: {}",
            info.isolation.backend,
            info.isolation.version,
            info.isolation.namespaces.join("+"),
            info.isolation.network,
            info.isolation.limits_mode,
            if info.isolation.limits_degraded { " (limits degraded)" } else { "" },
            limits.memory_bytes >> 20,
            limits.pids,
            limits.cpu_millis as f64 / 1000.0,
            info.exec_timeout_seconds,
            info.workspace_root,
        );
        engine.spawn_sweeper();
        let state = AppState {
            engine: engine.clone(),
            keepalive: Duration::from_secs(args.keepalive_seconds.max(1)),
            listen: listen.to_string(),
            mcp_allowed_hosts: args.mcp_allowed_hosts.clone(),
            preview_host: Some(args.preview_host.trim().trim_matches('.').to_string())
                .filter(|host| !host.is_empty()),
            shutdown: tokio_util::sync::CancellationToken::new(),
        };
        let stop_sessions = state.shutdown.clone();
        let shutdown_engine = engine.clone();
        // Exec streams are many small writes; without TCP_NODELAY each waits on the peer's
        // delayed ACK (~40 ms) and "streaming" would not be.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!(error = %e, "cannot set TCP_NODELAY");
            }
        });
        let serve = axum::serve(listener, router(state)).with_graceful_shutdown(async move {
            shutdown_signal().await;
            tracing::info!("shutting down: stopping running execs");
            stop_sessions.cancel();
            // Kill running execs first so their streams can end with `done`.
            tokio::spawn(async move { shutdown_engine.shutdown().await });
        });
        serve.await.map_err(|e| format!("server error: {e}"))?;
        engine.shutdown().await;
        Ok(())
    })
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler cannot fail");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
