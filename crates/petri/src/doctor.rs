//! `petri doctor`: what isolation this host gives, checked for real, with a verdict that
//! fails loudly (non-zero exit) rather than letting the server silently run weaker.

use std::path::Path;

use petri_sandbox::{Backend, BwrapBackend, BwrapConfig, CgroupMode, Cgroups};

/// Exit codes: everything works; sandboxes run but something is degraded; no sandbox.
pub const EXIT_OK: u8 = 0;
pub const EXIT_UNAVAILABLE: u8 = 1;
pub const EXIT_DEGRADED: u8 = 2;

struct Report {
    lines: Vec<(String, &'static str, String)>,
}

impl Report {
    fn add(&mut self, check: &str, state: &'static str, detail: impl Into<String>) {
        self.lines.push((check.to_string(), state, detail.into()));
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn device_access(path: &str) -> &'static str {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(_) => "accessible",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "absent",
        Err(_) => "not accessible to this user",
    }
}

/// Probes the host with `bwrap` and prints the report. Returns the exit code.
pub fn run(bwrap: &Path) -> u8 {
    let mut report = Report { lines: Vec::new() };
    let mut degraded = false;
    let runtime = match tempfile_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("petri doctor: cannot create a scratch directory: {e}");
            return EXIT_UNAVAILABLE;
        }
    };
    let own = read("/proc/self/cgroup").unwrap_or_default();
    let cgroups = Cgroups::detect(Path::new("/sys/fs/cgroup"), &own);
    let limits = match cgroups.mode() {
        CgroupMode::Unavailable { reason } => {
            degraded = true;
            (
                "degraded",
                format!("no writable cgroup ({reason}); per-process rlimits only"),
            )
        }
        _ => (
            "ok",
            format!(
                "{} (memory, processes, CPU per sandbox)",
                cgroups.mode_name()
            ),
        ),
    };
    let backend = BwrapBackend::new(BwrapConfig {
        binary: bwrap.to_path_buf(),
        runtime_dir: runtime.clone(),
        tmp_size_bytes: 16 << 20,
        extra_ro_paths: Vec::new(),
        base_env: Vec::new(),
        tools: Vec::new(),
        landlock_init: None,
        cgroups,
    });
    let userns = read("/proc/sys/user/max_user_namespaces").unwrap_or_else(|| "?".into());
    let exit = match &backend {
        Ok(backend) => {
            let info = backend.info();
            report.add(
                "sandbox",
                "ok",
                format!(
                    "{} works: {} namespaces, no capabilities, seccomp filter (max_user_namespaces {userns})",
                    info.version,
                    info.namespaces.join("+")
                ),
            );
            report.add("limits", limits.0, limits.1);
            if backend.supports_registry_network() {
                report.add(
                    "registry network",
                    "ok",
                    "dependency installs reach allowlisted registries only",
                );
            } else {
                degraded = true;
                report.add(
                    "registry network",
                    "degraded",
                    "an exec cannot get its own network namespace: no dependency installs",
                );
            }
            if degraded { EXIT_DEGRADED } else { EXIT_OK }
        }
        Err(e) => {
            report.add("sandbox", "FAILED", format!("{e}"));
            report.add("limits", limits.0, limits.1);
            EXIT_UNAVAILABLE
        }
    };
    let seccomp = read("/proc/sys/kernel/seccomp/actions_avail");
    report.add(
        "seccomp",
        if seccomp.is_some() { "ok" } else { "FAILED" },
        seccomp.map_or("not available in this kernel".into(), |a| {
            format!("filters available ({a})")
        }),
    );
    let mut weaker = false;
    match petri_sandbox::landlock_abi() {
        Some(abi) => report.add(
            "landlock",
            "ok",
            format!("ABI {abi}: every exec may write only below /sandbox, /tmp and /dev/shm"),
        ),
        None => {
            weaker = true;
            report.add(
                "landlock",
                "degraded",
                "not available: mounts are the only wall on writes",
            );
        }
    }
    if rustix::process::geteuid().is_root() {
        report.add(
            "identities",
            "ok",
            "root: each sandbox runs as its own host uid",
        );
    } else {
        weaker = true;
        report.add(
            "identities",
            "degraded",
            "not root: sandboxes share the server's uid",
        );
    }
    let disks = petri_sandbox::DiskQuotas::detect(runtime.join("disks"));
    match disks.mode() {
        petri_sandbox::DiskMode::LoopExt4 => report.add(
            "disk quota",
            "ok",
            "a loop-mounted ext4 filesystem per sandbox (ENOSPC at its disk_mb)",
        ),
        petri_sandbox::DiskMode::Unavailable { reason } => {
            weaker = true;
            report.add(
                "disk quota",
                "degraded",
                format!("{reason}: only single files are capped (RLIMIT_FSIZE)"),
            );
        }
    }
    let exit = if exit == EXIT_OK && weaker {
        EXIT_DEGRADED
    } else {
        exit
    };
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let hardware = cpuinfo.split_whitespace().any(|w| w == "vmx" || w == "svm");
    report.add(
        "microVM",
        "info",
        format!(
            "/dev/kvm {}, hardware virtualisation {}: {}",
            device_access("/dev/kvm"),
            if hardware { "present" } else { "absent" },
            if hardware {
                "a microVM tier could run here"
            } else {
                "no microVM tier on this host"
            }
        ),
    );
    report.add(
        "tun / fuse",
        "info",
        format!(
            "/dev/net/tun {}, /dev/fuse {}",
            device_access("/dev/net/tun"),
            device_access("/dev/fuse")
        ),
    );
    let _ = std::fs::remove_dir_all(&runtime);
    println!("petri doctor");
    for (check, state, detail) in &report.lines {
        println!("  {check:<17} {state:<9} {detail}");
    }
    println!(
        "verdict: {}",
        match exit {
            EXIT_OK => "full isolation",
            EXIT_DEGRADED => "sandboxes run, but with the degradations above",
            _ => "no sandbox can run on this host",
        }
    );
    exit
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("petri-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
