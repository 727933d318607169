//! Per-sandbox cgroups: v2 where the host is unified, v1 (memory, pids, cpu, freezer) on
//! legacy or hybrid hosts, nothing (and rlimits instead) where no hierarchy is writable.
//!
//! The hierarchy root is a parameter so the layout logic can be tested against a temp dir.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Limits, SandboxError};

const GROUP_NAME: &str = "petri";
const V1_CONTROLLERS: [&str; 4] = ["memory", "pids", "cpu", "freezer"];
const V2_CONTROLLERS: &str = "+memory +pids +cpu";
const CPU_PERIOD_US: u64 = 100_000;

/// Which cgroup hierarchy limits go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupMode {
    /// Unified hierarchy: one directory per sandbox under `parent`.
    V2 { parent: PathBuf },
    /// Legacy hierarchy: one directory per sandbox under each controller's `parent`.
    V1 { parents: Vec<(String, PathBuf)> },
    /// No writable hierarchy; limits fall back to rlimits.
    Unavailable { reason: String },
}

/// The cgroup manager of one server.
#[derive(Debug, Clone)]
pub struct Cgroups {
    mode: CgroupMode,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Cgroup {
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), SandboxError> {
    fs::write(path, value).map_err(io_err(path))
}

/// Proves we may create sandbox cgroups under `parent` (it may exist, made by another user).
fn probe_writable(parent: &Path) -> Result<(), String> {
    let probe = parent.join(format!("probe-{}", std::process::id()));
    fs::create_dir(&probe)
        .and_then(|()| fs::remove_dir(&probe))
        .map_err(|e| format!("cannot create cgroups under {}: {e}", parent.display()))
}

/// The server's own cgroup path for `controller` (`""` for the v2 line) from `/proc/self/cgroup`.
fn own_path(proc_self_cgroup: &str, controller: &str) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, list, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            list.is_empty()
        } else {
            list.split(',').any(|c| c == controller)
        };
        matches.then(|| path.trim_start_matches('/').to_string())
    })
}

impl Cgroups {
    /// Probes the host: `fs_root` is normally `/sys/fs/cgroup`, `proc_self_cgroup` the
    /// contents of `/proc/self/cgroup`.
    pub fn detect(fs_root: &Path, proc_self_cgroup: &str) -> Self {
        let mode = if fs_root.join("cgroup.controllers").exists() {
            Self::setup_v2(fs_root, proc_self_cgroup)
        } else if fs_root.join("memory").is_dir() {
            Self::setup_v1(fs_root, proc_self_cgroup)
        } else {
            Err(format!("no cgroup hierarchy at {}", fs_root.display()))
        };
        let mode = mode.unwrap_or_else(|reason| CgroupMode::Unavailable { reason });
        Self { mode }
    }

    /// A manager that never uses cgroups.
    pub fn unavailable(reason: &str) -> Self {
        Self {
            mode: CgroupMode::Unavailable {
                reason: reason.to_string(),
            },
        }
    }

    fn setup_v1(fs_root: &Path, proc_self_cgroup: &str) -> Result<CgroupMode, String> {
        let mut parents = Vec::new();
        for controller in V1_CONTROLLERS {
            let mount = fs_root.join(controller);
            if !mount.is_dir() {
                if controller == "freezer" {
                    continue;
                }
                return Err(format!("cgroup v1 controller {controller} is not mounted"));
            }
            let own = own_path(proc_self_cgroup, controller).unwrap_or_default();
            let parent = mount.join(own).join(GROUP_NAME);
            fs::create_dir_all(&parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            probe_writable(&parent)?;
            parents.push((controller.to_string(), parent));
        }
        Ok(CgroupMode::V1 { parents })
    }

    fn setup_v2(fs_root: &Path, proc_self_cgroup: &str) -> Result<CgroupMode, String> {
        let own = fs_root.join(own_path(proc_self_cgroup, "").unwrap_or_default());
        let fail = |what: &str, path: &Path, e: std::io::Error| {
            format!("cannot {what} {}: {e}", path.display())
        };
        let subtree = own.join("cgroup.subtree_control");
        let enabled = fs::read_to_string(&subtree).map_err(|e| fail("read", &subtree, e))?;
        let missing = ["memory", "pids", "cpu"]
            .iter()
            .any(|c| !enabled.split_whitespace().any(|e| e == *c));
        if missing {
            // "No internal processes": a non-root cgroup holding processes cannot enable
            // controllers for children, so the server first moves itself into a leaf.
            if own != fs_root {
                let leaf = own.join("petri-server");
                fs::create_dir_all(&leaf).map_err(|e| fail("create", &leaf, e))?;
                let procs = leaf.join("cgroup.procs");
                fs::write(&procs, "0").map_err(|e| fail("join", &procs, e))?;
            }
            fs::write(&subtree, V2_CONTROLLERS)
                .map_err(|e| fail("enable controllers in", &subtree, e))?;
        }
        let parent = own.join(GROUP_NAME);
        fs::create_dir_all(&parent).map_err(|e| fail("create", &parent, e))?;
        probe_writable(&parent)?;
        let nested = parent.join("cgroup.subtree_control");
        fs::write(&nested, V2_CONTROLLERS)
            .map_err(|e| fail("enable controllers in", &nested, e))?;
        Ok(CgroupMode::V2 { parent })
    }

    /// How limits are enforced.
    pub fn mode(&self) -> &CgroupMode {
        &self.mode
    }

    /// `cgroup-v2`, `cgroup-v1` or `rlimit`.
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            CgroupMode::V2 { .. } => "cgroup-v2",
            CgroupMode::V1 { .. } => "cgroup-v1",
            CgroupMode::Unavailable { .. } => "rlimit",
        }
    }

    fn dirs(&self, sandbox_id: &str) -> Vec<(String, PathBuf)> {
        match &self.mode {
            CgroupMode::V2 { parent } => vec![(String::new(), parent.join(sandbox_id))],
            CgroupMode::V1 { parents } => parents
                .iter()
                .map(|(controller, parent)| (controller.clone(), parent.join(sandbox_id)))
                .collect(),
            CgroupMode::Unavailable { .. } => Vec::new(),
        }
    }

    /// Creates (or updates) the sandbox's cgroups with `limits`, and opens the files a child
    /// writes to join them. Empty when cgroups are unavailable.
    pub(crate) fn enter(
        &self,
        sandbox_id: &str,
        limits: &Limits,
    ) -> Result<SandboxCgroup, SandboxError> {
        let mut procs = Vec::new();
        let mut oom_counter = None;
        for (controller, dir) in self.dirs(sandbox_id) {
            fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            let quota = limits.cpu_millis * CPU_PERIOD_US / 1000;
            match controller.as_str() {
                "" => {
                    write_file(&dir.join("memory.max"), &limits.memory_bytes.to_string())?;
                    // Not every v2 host has swap accounting; without it there is no swap to limit.
                    let _ = fs::write(dir.join("memory.swap.max"), "0");
                    write_file(&dir.join("pids.max"), &limits.pids.to_string())?;
                    write_file(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
                    oom_counter = Some(OomCounter::V2(dir.join("memory.events")));
                }
                "memory" => {
                    let bytes = limits.memory_bytes.to_string();
                    // memsw must stay >= the memory limit, so order depends on the direction.
                    let memsw = dir.join("memory.memsw.limit_in_bytes");
                    let _ = fs::write(&memsw, &bytes);
                    write_file(&dir.join("memory.limit_in_bytes"), &bytes)?;
                    let _ = fs::write(&memsw, &bytes);
                    oom_counter = Some(OomCounter::V1(dir.join("memory.oom_control")));
                }
                "pids" => write_file(&dir.join("pids.max"), &limits.pids.to_string())?,
                "cpu" => {
                    write_file(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                    write_file(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
                _ => {}
            }
            // On v1 the child moves its only thread through `tasks`: writing the calling
            // thread there skips the global threadgroup lock that `cgroup.procs` takes, whose
            // RCU grace period cost 5-13 ms per exec here (0.5 ms via `tasks`). The child is
            // single-threaded between fork and exec, so thread and process are the same.
            let join_file = if controller.is_empty() {
                "cgroup.procs"
            } else {
                "tasks"
            };
            let procs_path = dir.join(join_file);
            let file = OpenOptions::new()
                .write(true)
                .open(&procs_path)
                .map_err(io_err(&procs_path))?;
            procs.push(OwnedFd::from(file));
        }
        let oom_kills_before = oom_counter.as_ref().map_or(0, OomCounter::read);
        Ok(SandboxCgroup {
            procs,
            oom_counter,
            oom_kills_before,
        })
    }

    /// Kills every process in the sandbox's cgroups and removes them.
    pub(crate) fn destroy(&self, sandbox_id: &str) -> Result<(), SandboxError> {
        let dirs = self.dirs(sandbox_id);
        let freezer = dirs
            .iter()
            .find(|(c, _)| c == "freezer")
            .map(|(_, d)| d.clone());
        for attempt in 0..50 {
            let mut busy = false;
            if let Some(freezer) = &freezer {
                // Freezing first stops a fork bomb from outrunning the kill loop.
                let _ = fs::write(freezer.join("freezer.state"), "FROZEN");
            }
            for (_, dir) in &dirs {
                if !dir.exists() {
                    continue;
                }
                let _ = fs::write(dir.join("cgroup.kill"), "1");
                for pid in pids_in(dir) {
                    busy = true;
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            if let Some(freezer) = &freezer {
                let _ = fs::write(freezer.join("freezer.state"), "THAWED");
            }
            let mut remaining = false;
            for (_, dir) in &dirs {
                match fs::remove_dir(dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) if attempt == 49 => return Err(io_err(dir)(e)),
                    Err(_) => remaining = true,
                }
            }
            if !remaining {
                return Ok(());
            }
            if busy || remaining {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }
}

fn pids_in(dir: &Path) -> Vec<rustix::process::Pid> {
    let Ok(text) = fs::read_to_string(dir.join("cgroup.procs")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter_map(rustix::process::Pid::from_raw)
        .collect()
}

/// Where the kernel counts OOM kills of a sandbox.
#[derive(Debug)]
enum OomCounter {
    V1(PathBuf),
    V2(PathBuf),
}

impl OomCounter {
    fn read(&self) -> u64 {
        let (OomCounter::V1(path) | OomCounter::V2(path)) = self;
        let Ok(text) = fs::read_to_string(path) else {
            return 0;
        };
        text.lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The cgroups one exec joins.
#[derive(Debug)]
pub(crate) struct SandboxCgroup {
    pub procs: Vec<OwnedFd>,
    oom_counter: Option<OomCounter>,
    oom_kills_before: u64,
}

impl SandboxCgroup {
    /// Splits off the descriptors the child needs, keeping the OOM watch.
    pub fn into_parts(self) -> (Vec<OwnedFd>, OomWatch) {
        (
            self.procs,
            OomWatch {
                counter: self.oom_counter,
                before: self.oom_kills_before,
            },
        )
    }
}

/// Tells whether the kernel OOM-killed something in the sandbox during an exec.
#[derive(Debug)]
pub struct OomWatch {
    counter: Option<OomCounter>,
    before: u64,
}

impl OomWatch {
    pub(crate) fn none() -> Self {
        Self {
            counter: None,
            before: 0,
        }
    }

    pub(crate) fn fired(&self) -> bool {
        self.counter
            .as_ref()
            .is_some_and(|c| c.read() > self.before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str =
        "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n";

    #[test]
    fn own_path_reads_v1_and_v2_lines() {
        assert_eq!(
            own_path(HYBRID, "memory").as_deref(),
            Some("process_api/abc")
        );
        assert_eq!(own_path(HYBRID, "cpu").as_deref(), Some(""));
        assert_eq!(own_path(HYBRID, "").as_deref(), Some(""));
        assert_eq!(
            own_path("0::/user.slice/x\n", "").as_deref(),
            Some("user.slice/x")
        );
        assert_eq!(own_path(HYBRID, "blkio"), None);
    }

    #[test]
    fn v1_layout_writes_limits_per_controller() {
        let root = tempfile::tempdir().unwrap();
        for c in V1_CONTROLLERS {
            fs::create_dir_all(root.path().join(c)).unwrap();
        }
        let cgroups = Cgroups::detect(root.path(), HYBRID);
        assert_eq!(cgroups.mode_name(), "cgroup-v1");
        let limits = Limits {
            memory_bytes: 64 << 20,
            pids: 32,
            cpu_millis: 500,
            disk_bytes: 1 << 30,
        };
        // The fake hierarchy has no cgroup.procs; create them as the kernel would.
        for (_, dir) in cgroups.dirs("sb_x") {
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("tasks"), "").unwrap();
        }
        let cg = cgroups.enter("sb_x", &limits).unwrap();
        assert_eq!(cg.procs.len(), 4);
        let mem = root.path().join("memory/process_api/abc/petri/sb_x");
        assert_eq!(
            fs::read_to_string(mem.join("memory.limit_in_bytes")).unwrap(),
            "67108864"
        );
        let cpu = root.path().join("cpu/petri/sb_x");
        assert_eq!(
            fs::read_to_string(cpu.join("cpu.cfs_quota_us")).unwrap(),
            "50000"
        );
        let pids = root.path().join("pids/petri/sb_x");
        assert_eq!(fs::read_to_string(pids.join("pids.max")).unwrap(), "32");
    }

    #[test]
    fn v2_layout_moves_server_to_leaf_and_enables_controllers() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("system.slice/petri.service");
        fs::create_dir_all(&own).unwrap();
        fs::write(root.path().join("cgroup.controllers"), "cpu memory pids").unwrap();
        fs::write(own.join("cgroup.subtree_control"), "").unwrap();
        let cgroups = Cgroups::detect(root.path(), "0::/system.slice/petri.service\n");
        assert_eq!(cgroups.mode_name(), "cgroup-v2");
        assert_eq!(
            fs::read_to_string(own.join("petri-server/cgroup.procs")).unwrap(),
            "0"
        );
        assert_eq!(
            fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(),
            V2_CONTROLLERS
        );
        let dir = own.join("petri/sb_y");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("cgroup.procs"), "").unwrap();
        fs::write(dir.join("memory.events"), "low 0\noom 1\noom_kill 2\n").unwrap();
        let limits = Limits {
            memory_bytes: 1 << 30,
            pids: 100,
            cpu_millis: 2000,
            disk_bytes: 1 << 30,
        };
        let cg = cgroups.enter("sb_y", &limits).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("memory.max")).unwrap(),
            "1073741824"
        );
        assert_eq!(
            fs::read_to_string(dir.join("cpu.max")).unwrap(),
            "200000 100000"
        );
        let (_, watch) = cg.into_parts();
        assert!(!watch.fired());
        fs::write(dir.join("memory.events"), "oom_kill 3\n").unwrap();
        assert!(watch.fired());
    }

    #[test]
    fn missing_hierarchy_means_rlimits() {
        let root = tempfile::tempdir().unwrap();
        let cgroups = Cgroups::detect(root.path(), HYBRID);
        assert_eq!(cgroups.mode_name(), "rlimit");
    }
}
