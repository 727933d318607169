//! Per-sandbox disk quotas.
//!
//! As root, each workspace is its own ext4 filesystem in a sparse image file, loop-mounted on
//! the workspace directory (`nosuid,nodev`): writing past its size fails with ENOSPC inside
//! that sandbox only, and the host's disk is never filled. The kernel here has neither ext4
//! nor XFS project quotas, which would be cheaper. Without root (or without `mkfs.ext4` and
//! loop devices) quotas are unavailable: each process's files are capped by `RLIMIT_FSIZE`
//! instead and `/health` says the disk limit is degraded.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::SandboxError;

/// Bytes per inode: small-file trees (`node_modules`) must not run out of inodes first.
const BYTES_PER_INODE: &str = "4096";
/// Size of the image used to check, at start-up, that quotas work on this host.
const PROBE_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskMode {
    /// A loop-mounted ext4 image per sandbox.
    LoopExt4,
    Unavailable {
        reason: String,
    },
}

/// Where images live and whether quotas work here.
#[derive(Debug, Clone)]
pub struct DiskQuotas {
    images: PathBuf,
    mode: DiskMode,
    spares: Arc<Spares>,
}

/// Images formatted ahead of time at the default size, so creating a sandbox only mounts
/// one (`mkfs` takes about as long as the mount itself).
#[derive(Debug, Default)]
struct Spares {
    ready: Mutex<Vec<PathBuf>>,
    /// The size spares are made at; 0: no spares.
    bytes: AtomicU64,
    filling: AtomicBool,
    made: AtomicU64,
}

/// How many formatted images wait for new sandboxes.
const SPARES: usize = 2;

fn disk_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SandboxError {
    let what = what.into();
    move |source| SandboxError::Disk { what, source }
}

fn run(command: &mut Command, what: &str) -> Result<(), SandboxError> {
    let out = command.output().map_err(disk_err(what))?;
    if out.status.success() {
        return Ok(());
    }
    Err(SandboxError::Disk {
        what: what.to_string(),
        source: std::io::Error::other(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    })
}

/// Whether something is mounted on `path` (it sits on another device than its parent).
pub fn is_mount_point(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(own), Some(Ok(parent))) = (
        std::fs::symlink_metadata(path),
        path.parent().map(std::fs::metadata),
    ) else {
        return false;
    };
    own.dev() != parent.dev()
}

/// Creates `dir` (and its parents) for the server alone.
fn private_dir(dir: &Path) -> Result<(), SandboxError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(disk_err("image directory"))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(disk_err("image directory mode"))
}

/// A sparse image of `bytes` at `image`, formatted ext4 with its root owned by `host_uid`.
fn make_image(
    dir: &Path,
    image: &Path,
    bytes: u64,
    host_uid: Option<u32>,
) -> Result<(), SandboxError> {
    private_dir(dir)?;
    // An image is a whole workspace: readable by the server alone.
    let file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(image)
        .map_err(disk_err(image.display().to_string()))?;
    file.set_len(bytes).map_err(disk_err("sizing the image"))?;
    drop(file);
    let owner = host_uid.unwrap_or(0);
    let made = run(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0", "-i", BYTES_PER_INODE, "-E"])
            .arg(format!(
                "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner={owner}:{owner}"
            ))
            .arg(image),
        "mkfs.ext4",
    );
    if made.is_err() {
        let _ = std::fs::remove_file(image);
    }
    made
}

impl DiskQuotas {
    pub fn unavailable(images: PathBuf, reason: &str) -> Self {
        Self {
            images,
            mode: DiskMode::Unavailable {
                reason: reason.into(),
            },
            spares: Arc::default(),
        }
    }

    /// Quotas with images in `images`, after checking for real that an image can be made,
    /// mounted and released on this host.
    pub fn detect(images: PathBuf) -> Self {
        if !rustix::process::geteuid().is_root() {
            return Self::unavailable(images, "loop-mounted filesystems need root");
        }
        let quotas = Self {
            images,
            mode: DiskMode::LoopExt4,
            spares: Arc::default(),
        };
        let probe = || -> Result<(), SandboxError> {
            private_dir(&quotas.images)?;
            let mount_point = quotas.images.join("probe-mount");
            std::fs::create_dir_all(&mount_point).map_err(disk_err("probe directory"))?;
            quotas.release("probe", &mount_point)?;
            quotas.provision("probe", &mount_point, PROBE_BYTES, None)?;
            quotas.release("probe", &mount_point)?;
            std::fs::remove_dir(&mount_point).map_err(disk_err("probe directory"))
        };
        match probe() {
            Ok(()) => quotas,
            Err(e) => Self::unavailable(quotas.images, &e.to_string()),
        }
    }

    pub fn mode(&self) -> &DiskMode {
        &self.mode
    }

    fn image(&self, id: &str) -> PathBuf {
        self.images.join(format!("{id}.ext4"))
    }

    /// Keeps [`SPARES`] images of `bytes` formatted in the background from now on (images
    /// left by an earlier run are discarded: one may be half made).
    pub fn keep_spares(&self, bytes: u64) {
        if self.mode != DiskMode::LoopExt4 {
            return;
        }
        let _ = std::fs::remove_dir_all(self.spares_dir());
        self.spares.bytes.store(bytes, Ordering::SeqCst);
        self.refill();
    }

    /// Formats spares on a background thread until there are enough (one thread at a time).
    fn refill(&self) {
        let bytes = self.spares.bytes.load(Ordering::SeqCst);
        if bytes == 0 || self.spares.filling.swap(true, Ordering::SeqCst) {
            return;
        }
        let quotas = self.clone();
        std::thread::spawn(move || {
            loop {
                let count = quotas
                    .spares
                    .ready
                    .lock()
                    .map(|r| r.len())
                    .unwrap_or(SPARES);
                if count >= SPARES {
                    break;
                }
                let n = quotas.spares.made.fetch_add(1, Ordering::SeqCst);
                let spare = quotas.spares_dir().join(format!("spare-{n}.ext4"));
                match make_image(&quotas.spares_dir(), &spare, bytes, None) {
                    Ok(()) => {
                        if let Ok(mut ready) = quotas.spares.ready.lock() {
                            ready.push(spare);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot format a spare disk image");
                        break;
                    }
                }
            }
            quotas.spares.filling.store(false, Ordering::SeqCst);
        });
    }

    fn spares_dir(&self) -> PathBuf {
        self.images.join("spares")
    }

    /// A formatted spare of exactly `bytes`, if one is waiting.
    fn take_spare(&self, bytes: u64) -> Option<PathBuf> {
        if self.spares.bytes.load(Ordering::SeqCst) != bytes {
            return None;
        }
        let spare = self.spares.ready.lock().ok()?.pop();
        self.refill();
        spare
    }

    /// Makes `mount_point` a fresh filesystem of `bytes`, its root owned by `host_uid` (a
    /// spare's root is root's: the caller hands the mounted root over).
    pub fn provision(
        &self,
        id: &str,
        mount_point: &Path,
        bytes: u64,
        host_uid: Option<u32>,
    ) -> Result<(), SandboxError> {
        if self.mode != DiskMode::LoopExt4 {
            return Ok(());
        }
        let image = self.image(id);
        let made = match self.take_spare(bytes) {
            Some(spare) => {
                std::fs::rename(&spare, &image).map_err(disk_err("taking a spare image"))
            }
            None => make_image(&self.images, &image, bytes, host_uid),
        }
        .and_then(|()| self.mount(id, mount_point));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&image);
            return Err(e);
        }
        // Nothing in a workspace should be root's; e2fsck recreates it if ever needed.
        let _ = std::fs::remove_dir(mount_point.join("lost+found"));
        Ok(())
    }

    fn mount(&self, id: &str, mount_point: &Path) -> Result<(), SandboxError> {
        run(
            Command::new("mount")
                .args(["-t", "ext4", "-o", "loop,nosuid,nodev,noinit_itable"])
                .arg(self.image(id))
                .arg(mount_point),
            "mount",
        )
    }

    /// Mounts an existing sandbox's image again (after a host reboot); no-op when mounted.
    pub fn remount(&self, id: &str, mount_point: &Path) -> Result<(), SandboxError> {
        if self.mode != DiskMode::LoopExt4 || is_mount_point(mount_point) {
            return Ok(());
        }
        if !self.image(id).exists() {
            return Ok(());
        }
        self.mount(id, mount_point)
    }

    /// Unmounts (lazily: processes still holding files do not block it) and deletes the
    /// image. The loop device is freed by the kernel once the last user is gone.
    pub fn release(&self, id: &str, mount_point: &Path) -> Result<(), SandboxError> {
        if is_mount_point(mount_point) {
            rustix::mount::unmount(mount_point, rustix::mount::UnmountFlags::DETACH)
                .map_err(|e| disk_err("unmount")(e.into()))?;
        }
        match std::fs::remove_file(self.image(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(disk_err("removing the image")(e))
            }
            _ => Ok(()),
        }
    }
}
