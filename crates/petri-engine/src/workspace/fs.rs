//! Symlink-proof file operations inside a workspace.
//!
//! Sandboxed code owns its workspace and may plant symlinks, FIFOs or swap directories at any
//! time. Every operation therefore starts from an open directory descriptor and walks one
//! component at a time with `O_NOFOLLOW`, so no path the server touches can leave the tree.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, openat, statat};
use rustix::io::Errno;

use crate::EngineError;
use crate::workspace::RelPath;

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

pub(crate) fn dir_mode() -> Mode {
    Mode::from_raw_mode(0o755)
}

fn invalid(path: &str, reason: &str) -> EngineError {
    EngineError::InvalidPath {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

fn io_error(path: &str, errno: Errno) -> EngineError {
    EngineError::Io {
        context: format!("workspace path {path:?}"),
        source: errno.into(),
    }
}

/// Opens a directory that the server itself created (a workspace or staging root).
pub(crate) fn open_root(path: &std::path::Path) -> Result<OwnedFd, EngineError> {
    openat(rustix::fs::CWD, path, DIR_FLAGS, Mode::empty()).map_err(|e| EngineError::Io {
        context: format!("cannot open {}", path.display()),
        source: e.into(),
    })
}

/// Who owns what the server creates in a workspace: the sandbox's own host uid when it has
/// one (so its code can change the files), else the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owner(Option<u32>);

impl Owner {
    pub fn new(host_uid: Option<u32>) -> Self {
        Self(host_uid)
    }

    pub fn uid(self) -> Option<u32> {
        self.0
    }

    /// Hands a freshly created file or directory to the owner (by descriptor: no path is
    /// resolved again).
    pub(crate) fn adopt(self, fd: &OwnedFd, shown: &str) -> Result<(), EngineError> {
        let Some(uid) = self.0 else {
            return Ok(());
        };
        rustix::fs::fchown(
            fd,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(uid)),
        )
        .map_err(|e| io_error(shown, e))
    }
}

/// Creates the directory `name` in `dir` for `owner` and opens it.
pub(crate) fn make_dir(
    dir: &OwnedFd,
    name: &str,
    owner: Owner,
    shown: &str,
) -> Result<OwnedFd, EngineError> {
    let created = match rustix::fs::mkdirat(dir, name, dir_mode()) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(io_error(shown, e)),
    };
    let fd =
        openat(dir, name, DIR_FLAGS, Mode::empty()).map_err(|e| component_error(shown, name, e))?;
    if created {
        owner.adopt(&fd, shown)?;
    }
    Ok(fd)
}

/// Opens the directory `components` below `root`; with `create`, missing ones are made for
/// that owner.
pub(crate) fn open_dir(
    root: &OwnedFd,
    components: &[String],
    create: Option<Owner>,
    shown: &str,
) -> Result<OwnedFd, EngineError> {
    let mut current = rustix::io::dup(root).map_err(|e| io_error(shown, e))?;
    for name in components {
        let next = match openat(&current, name.as_str(), DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if let Some(owner) = create => {
                make_dir(&current, name, owner, shown)?
            }
            Err(Errno::NOENT) => {
                return Err(EngineError::PathNotFound {
                    path: shown.to_string(),
                });
            }
            Err(e) => return Err(component_error(shown, name, e)),
        };
        current = next;
    }
    Ok(current)
}

fn component_error(shown: &str, name: &str, errno: Errno) -> EngineError {
    match errno {
        Errno::LOOP | Errno::NOTDIR => invalid(
            shown,
            &format!("{name:?} is a symlink or not a directory in the sandbox"),
        ),
        other => io_error(shown, other),
    }
}

/// What a workspace entry is, without following symlinks.
pub(crate) fn kind_of(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        _ => "other",
    }
}

/// An entry of a workspace listing.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct FileEntry {
    pub path: String,
    /// `file`, `dir`, `symlink` or `other` (FIFOs, sockets).
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub size: u64,
    pub modified: String,
}

/// Deepest directory level a listing descends into. Sandboxed code can nest directories
/// without bound; recursion (and the listing's size) must not follow it.
pub(crate) const LIST_MAX_DEPTH: usize = 32;

/// Lists `dir` recursively (depth-first, sorted, at most [`LIST_MAX_DEPTH`] levels), never
/// following symlinks.
pub(crate) fn list_tree(
    dir: OwnedFd,
    prefix: &str,
    max_entries: usize,
    out: &mut Vec<FileEntry>,
) -> Result<(), EngineError> {
    list_level(dir, prefix, 0, max_entries, out)
}

fn list_level(
    dir: OwnedFd,
    prefix: &str,
    depth: usize,
    max_entries: usize,
    out: &mut Vec<FileEntry>,
) -> Result<(), EngineError> {
    let mut names: Vec<String> = Dir::read_from(&dir)
        .map_err(|e| io_error(prefix, e))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "." && name != "..")
        .collect();
    names.sort();
    for name in names {
        if out.len() >= max_entries {
            return Ok(());
        }
        let Ok(stat) = statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue; // Removed by the sandbox meanwhile.
        };
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let file_type = FileType::from_raw_mode(stat.st_mode);
        let modified = chrono::DateTime::from_timestamp(stat.st_mtime, 0)
            .map(crate::ids::format_time)
            .unwrap_or_default();
        out.push(FileEntry {
            path: path.clone(),
            kind: kind_of(file_type),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified,
        });
        if file_type == FileType::Directory
            && depth + 1 < LIST_MAX_DEPTH
            && let Ok(child) = openat(&dir, name.as_str(), DIR_FLAGS, Mode::empty())
        {
            list_level(child, &path, depth + 1, max_entries, out)?;
        }
    }
    Ok(())
}

/// What a client-named path resolved to.
#[derive(Debug)]
pub(crate) enum Resolved {
    File(std::fs::File, u64),
    Dir(OwnedFd),
}

/// Opens `path` for reading: a regular file or a directory, never through a symlink and never
/// blocking on a FIFO.
pub(crate) fn open_for_read(root: &OwnedFd, path: &RelPath) -> Result<Resolved, EngineError> {
    let shown = path.display();
    let (parents, name) = path.split_last();
    let parent = open_dir(root, parents, None, &shown)?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match openat(&parent, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(EngineError::PathNotFound { path: shown }),
        Err(Errno::LOOP) => return Err(invalid(&shown, "is a symlink")),
        Err(e) => return Err(io_error(&shown, e)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_error(&shown, e))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(Resolved::File(
            std::fs::File::from(fd),
            u64::try_from(stat.st_size).unwrap_or(0),
        )),
        FileType::Directory => Ok(Resolved::Dir(fd)),
        _ => Err(invalid(&shown, "is not a regular file or directory")),
    }
}

/// Creates a fresh temporary file in `dir` for content that is renamed into place when
/// complete, so readers never see half a file and a failed upload leaves nothing behind.
pub(crate) fn create_temp(
    dir: &OwnedFd,
    owner: Owner,
) -> Result<(String, std::fs::File), EngineError> {
    let name = format!(".petri-upload-{}", crate::ids::new_run_id());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(dir, name.as_str(), flags, Mode::from_raw_mode(0o644))
        .map_err(|e| io_error(&name, e))?;
    owner.adopt(&fd, &name)?;
    Ok((name, std::fs::File::from(fd)))
}

/// Moves `from` (in `from_dir`) to `to` (in `to_dir`), replacing a file or symlink there.
pub(crate) fn place(
    from_dir: &OwnedFd,
    from: &str,
    to_dir: &OwnedFd,
    to: &str,
    shown: &str,
) -> Result<(), EngineError> {
    match rustix::fs::renameat(from_dir, from, to_dir, to) {
        Ok(()) => Ok(()),
        Err(Errno::ISDIR) | Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => {
            let _ = rustix::fs::unlinkat(from_dir, from, AtFlags::empty());
            Err(invalid(shown, "is a directory in the sandbox"))
        }
        Err(e) => {
            let _ = rustix::fs::unlinkat(from_dir, from, AtFlags::empty());
            Err(io_error(shown, e))
        }
    }
}

/// Removes `name` in `parent` (a file, a symlink, or a directory with everything below it).
pub(crate) fn remove_at(parent: &OwnedFd, name: &str, shown: &str) -> Result<(), EngineError> {
    match statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => {
            return Err(EngineError::PathNotFound {
                path: shown.to_string(),
            });
        }
        Err(e) => return Err(io_error(shown, e)),
        Ok(_) => {}
    }
    remove_tree(parent, name).map_err(|e| io_error(shown, e))
}

/// Removes a temporary file left by a failed upload.
pub(crate) fn discard(dir: &OwnedFd, name: &str) {
    let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
}

/// Moves the tree in `src` into `dst`, merging directories. With `dry_run` nothing moves; it
/// only checks that no directory of the tree meets a symlink or file in `dst` and no file
/// meets a directory, so that a real run cannot fail half-way on those grounds.
pub(crate) fn merge_tree(
    src: &OwnedFd,
    dst: Option<&OwnedFd>,
    prefix: &str,
    dry_run: bool,
    owner: Owner,
) -> Result<(), EngineError> {
    let names = read_names(src).map_err(|e| io_error(prefix, e))?;
    for name in names {
        let shown = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let stat = statat(src, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| io_error(&shown, e))?;
        let is_dir = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
        let Some(dst) = dst else {
            // Everything below a directory that does not exist yet is new.
            continue;
        };
        if is_dir {
            let child_src = openat(src, name.as_str(), DIR_FLAGS, Mode::empty())
                .map_err(|e| io_error(&shown, e))?;
            let child_dst = match openat(dst, name.as_str(), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => Some(fd),
                Err(Errno::NOENT) if dry_run => None,
                Err(Errno::NOENT) => Some(make_dir(dst, &name, owner, &shown)?),
                Err(e) => return Err(component_error(&shown, &name, e)),
            };
            merge_tree(&child_src, child_dst.as_ref(), &shown, dry_run, owner)?;
        } else if dry_run {
            if let Ok(existing) = statat(dst, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                && FileType::from_raw_mode(existing.st_mode) == FileType::Directory
            {
                return Err(invalid(&shown, "is a directory in the sandbox"));
            }
        } else {
            place(src, &name, dst, &name, &shown)?;
        }
    }
    Ok(())
}

fn read_names(dir: &OwnedFd) -> Result<Vec<String>, Errno> {
    Ok(Dir::read_from(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "." && name != "..")
        .collect())
}

/// Removes the directory `name` in `parent` with everything below it, at any depth.
///
/// No recursion and no descriptor per level: every subdirectory met is first moved up into
/// `parent` under a fresh name and removed in its turn, so a tree nested a million levels
/// deep by sandboxed code costs no stack. Symlinks are removed, never followed.
pub(crate) fn remove_tree(parent: &OwnedFd, name: &str) -> Result<(), Errno> {
    let mut pending = vec![name.to_string()];
    while let Some(dir_name) = pending.pop() {
        let dir = match openat(parent, dir_name.as_str(), DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => continue,
            Err(Errno::NOTDIR | Errno::LOOP) => {
                rustix::fs::unlinkat(parent, dir_name.as_str(), AtFlags::empty())?;
                continue;
            }
            Err(e) => return Err(e),
        };
        loop {
            let names = read_names(&dir)?;
            if names.is_empty() {
                break;
            }
            for entry in names {
                match rustix::fs::unlinkat(&dir, entry.as_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(Errno::ISDIR) => {
                        let flattened = format!(".petri-rm-{}", crate::ids::new_run_id());
                        rustix::fs::renameat(&dir, entry.as_str(), parent, flattened.as_str())?;
                        pending.push(flattened);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        match rustix::fs::unlinkat(parent, dir_name.as_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
