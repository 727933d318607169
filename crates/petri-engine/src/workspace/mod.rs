//! Sandbox workspaces on the host: creation, removal and the file API (upload, zip import,
//! listing, download), all resolved symlink-proof below the workspace directory.

mod fs;
mod path;
mod zip;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;

pub use self::fs::{FileEntry, Owner};
pub(crate) use self::path::RelPath;
pub(crate) use self::zip::ZipLimits;
use petri_sandbox::{DiskMode, DiskQuotas, is_mount_point};

use crate::EngineError;

/// Most entries one listing returns.
pub const LISTING_MAX_ENTRIES: usize = 10_000;

/// Content of a workspace path.
#[derive(Debug)]
pub enum FileContent {
    File { file: tokio::fs::File, size: u64 },
    Dir(Vec<FileEntry>),
}

/// The directory holding every sandbox's workspace.
#[derive(Debug, Clone)]
pub(crate) struct Workspaces {
    root: PathBuf,
    staging: PathBuf,
    disks: DiskQuotas,
}

impl Workspaces {
    pub fn new(root: PathBuf, staging: PathBuf, disks: DiskQuotas) -> Self {
        Self {
            root,
            staging,
            disks,
        }
    }

    pub fn disk_mode(&self) -> &DiskMode {
        self.disks.mode()
    }

    /// Gives a new workspace its own filesystem of `bytes` (where quotas work), its root
    /// owned by the sandbox.
    pub fn provision(&self, id: &str, bytes: u64, owner: Owner) -> Result<(), EngineError> {
        self.disks
            .provision(id, &self.path(id), bytes, owner.uid())
            .map_err(EngineError::from)
    }

    /// Mounts a live workspace's filesystem again if it is not (after a host reboot).
    pub fn remount(&self, id: &str) -> Result<(), EngineError> {
        self.disks
            .remount(id, &self.path(id))
            .map_err(EngineError::from)
    }

    /// Host path of a workspace. `id` must be a validated sandbox id.
    pub fn path(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    pub fn create(&self, id: &str) -> Result<(), EngineError> {
        let path = self.path(id);
        std::fs::create_dir(&path).map_err(EngineError::io(format!(
            "cannot create workspace {}",
            path.display()
        )))
    }

    /// Gives the workspace to its sandbox's own uid, readable by nobody else.
    pub fn hand_over(&self, id: &str, owner: Owner) -> Result<(), EngineError> {
        if owner == Owner::default() {
            return Ok(());
        }
        let workspace = self.open(id)?;
        owner.adopt(&workspace, id)?;
        rustix::fs::fchmod(&workspace, rustix::fs::Mode::from_raw_mode(0o700)).map_err(|e| {
            EngineError::Io {
                context: format!("cannot restrict workspace of {id}"),
                source: e.into(),
            }
        })
    }

    /// Frees a workspace's disk: it is first moved into staging (so it vanishes at once,
    /// even if removal is interrupted), then removed without recursion whatever its depth.
    pub fn remove(&self, id: &str) -> Result<(), EngineError> {
        if is_mount_point(&self.path(id)) {
            // Its own filesystem: unmounting frees everything at once.
            self.disks.release(id, &self.path(id))?;
            return match std::fs::remove_dir(self.path(id)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(EngineError::Io {
                    context: format!("cannot remove the mount point of {id}"),
                    source: e,
                }),
                _ => Ok(()),
            };
        }
        self.disks.release(id, &self.path(id))?;
        let doomed = format!("rm-{id}-{}", crate::ids::new_run_id());
        match std::fs::rename(self.path(id), self.staging.join(&doomed)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(EngineError::Io {
                    context: format!("cannot remove workspace of {id}"),
                    source: e,
                });
            }
            Ok(()) => {}
        }
        remove_entry(&self.staging, &doomed)
    }

    fn open(&self, id: &str) -> Result<std::os::fd::OwnedFd, EngineError> {
        fs::open_root(&self.path(id))
    }

    /// Streams an upload into `path`, creating parent directories. The file appears
    /// atomically when complete; over `max_bytes` nothing is left behind.
    pub async fn write_file(
        &self,
        id: &str,
        path: &RelPath,
        mut body: impl ChunkSource,
        max_bytes: u64,
        owner: Owner,
    ) -> Result<u64, EngineError> {
        let shown = path.display();
        let (parents, name) = path.split_last();
        let workspace = self.open(id)?;
        // The body lands in the workspace root first; directories are only created once it
        // is complete, so a refused upload leaves nothing at all behind.
        let (temp, file) = fs::create_temp(&workspace, owner)?;
        let what = format!("upload {shown:?}");
        let written =
            match copy_capped(&mut body, tokio::fs::File::from_std(file), max_bytes, &what).await {
                Ok(written) => written,
                Err(e) => {
                    fs::discard(&workspace, &temp);
                    return Err(e);
                }
            };
        let parent = match fs::open_dir(&workspace, parents, Some(owner), &shown) {
            Ok(parent) => parent,
            Err(e) => {
                fs::discard(&workspace, &temp);
                return Err(e);
            }
        };
        fs::place(&workspace, &temp, &parent, name, &shown)?;
        Ok(written)
    }

    /// Streams an archive to a private staging file, then extracts it (see [`zip::extract`]).
    pub async fn import_zip(
        &self,
        id: &str,
        mut body: impl ChunkSource,
        max_bytes: u64,
        limits: ZipLimits,
        owner: Owner,
    ) -> Result<usize, EngineError> {
        let archive = self
            .staging
            .join(format!("upload-{}.zip", crate::ids::new_run_id()));
        let result = async {
            let file = tokio::fs::File::create(&archive)
                .await
                .map_err(EngineError::io("cannot stage zip upload"))?;
            copy_capped(&mut body, file, max_bytes, "zip upload").await?;
            let workspace = self.open(id)?;
            let archive = archive.clone();
            tokio::task::spawn_blocking(move || zip::extract(&archive, &workspace, limits, owner))
                .await
                .map_err(|e| EngineError::Task(e.to_string()))?
        }
        .await;
        let _ = tokio::fs::remove_file(&archive).await;
        result
    }

    /// Removes `path` (a file, a symlink or a whole directory); symlinks on the way are not
    /// followed, a symlink at `path` is removed itself.
    pub fn remove_path(&self, id: &str, path: &RelPath) -> Result<(), EngineError> {
        let workspace = self.open(id)?;
        let (parents, name) = path.split_last();
        let shown = path.display();
        let parent = fs::open_dir(&workspace, parents, None, &shown)?;
        fs::remove_at(&parent, name, &shown)
    }

    /// Lists the whole workspace or one directory of it.
    pub fn list(&self, id: &str, path: Option<&RelPath>) -> Result<Vec<FileEntry>, EngineError> {
        let workspace = self.open(id)?;
        let (dir, prefix) = match path {
            None => (workspace, String::new()),
            Some(path) => match fs::open_for_read(&workspace, path)? {
                fs::Resolved::Dir(dir) => (dir, path.display()),
                fs::Resolved::File(..) => {
                    return Err(EngineError::InvalidPath {
                        path: path.display(),
                        reason: "is a file, not a directory".into(),
                    });
                }
            },
        };
        let mut entries = Vec::new();
        fs::list_tree(dir, &prefix, LISTING_MAX_ENTRIES, &mut entries)?;
        Ok(entries)
    }

    /// Opens a file for download, or lists a directory.
    pub fn read(&self, id: &str, path: &RelPath) -> Result<FileContent, EngineError> {
        let workspace = self.open(id)?;
        match fs::open_for_read(&workspace, path)? {
            fs::Resolved::File(file, size) => Ok(FileContent::File {
                file: tokio::fs::File::from_std(file),
                size,
            }),
            fs::Resolved::Dir(dir) => {
                let mut entries = Vec::new();
                fs::list_tree(dir, &path.display(), LISTING_MAX_ENTRIES, &mut entries)?;
                Ok(FileContent::Dir(entries))
            }
        }
    }

    pub fn exists(&self, id: &str) -> bool {
        self.path(id).is_dir()
    }
}

/// Streams `body` into `file`, refusing it once it exceeds `max_bytes`. Returns its size.
async fn copy_capped(
    body: &mut impl ChunkSource,
    mut file: tokio::fs::File,
    max_bytes: u64,
    what: &str,
) -> Result<u64, EngineError> {
    let mut written: u64 = 0;
    while let Some(chunk) = body.next_chunk().await? {
        written += chunk.len() as u64;
        if written > max_bytes {
            return Err(EngineError::TooLarge {
                what: what.to_string(),
                limit: format!("{max_bytes} bytes (PETRI_MAX_UPLOAD_MB)"),
            });
        }
        file.write_all(&chunk)
            .await
            .map_err(EngineError::io(format!("writing {what}")))?;
    }
    file.flush()
        .await
        .map_err(EngineError::io(format!("writing {what}")))?;
    Ok(written)
}

/// Removes `name` (a file or a tree of any depth) from the server-owned directory `dir`.
pub(crate) fn remove_entry(dir: &Path, name: &str) -> Result<(), EngineError> {
    let parent = fs::open_root(dir)?;
    fs::remove_tree(&parent, name).map_err(|e| EngineError::Io {
        context: format!("cannot remove {}", dir.join(name).display()),
        source: e.into(),
    })
}

/// A source of upload chunks (a multipart field in the HTTP layer, a vector in tests).
pub trait ChunkSource: Send {
    /// The next chunk, or `None` at the end of the body.
    fn next_chunk(
        &mut self,
    ) -> impl std::future::Future<Output = Result<Option<Bytes>, EngineError>> + Send;
}

#[cfg(test)]
mod tests;
