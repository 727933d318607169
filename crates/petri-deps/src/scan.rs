//! Bounded, symlink-proof reading of a workspace written by untrusted code.

use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{CWD, Dir, FileType, Mode, OFlags, fstat, openat};

/// Most files read by one scan, most bytes read from one file, deepest directory visited.
const MAX_FILES: usize = 2_000;
const MAX_FILE_BYTES: u64 = 1 << 20;
const MAX_DEPTH: usize = 12;
/// Directories that hold installed or generated code, never the project's own imports.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "site-packages",
    "venv",
    "__pycache__",
    "target",
    "build",
    "dist",
];

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);
/// A planted symlink fails instead of being followed, a planted FIFO cannot block the server.
const FILE_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// Opens `relative` below `root` one component at a time, never following a symlink (a
/// sandbox may have replaced any directory on the way with one pointing into the host).
fn open_beneath(root: &Path, relative: &Path, last: OFlags) -> Option<OwnedFd> {
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let mut current = openat(CWD, root, DIR_FLAGS, Mode::empty()).ok()?;
    let Some((final_name, dirs)) = names.split_last() else {
        return Some(current);
    };
    for name in dirs {
        current = openat(&current, *name, DIR_FLAGS, Mode::empty()).ok()?;
    }
    openat(&current, *final_name, last, Mode::empty()).ok()
}

/// Reads the regular file `relative` below `root`, at most `MAX_FILE_BYTES`.
pub(crate) fn read_file(root: &Path, relative: impl AsRef<Path>) -> Option<Vec<u8>> {
    let fd = open_beneath(root, relative.as_ref(), FILE_FLAGS)?;
    if FileType::from_raw_mode(fstat(&fd).ok()?.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    fs::File::from(fd)
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Whether `relative` below `root` is a regular file (reached without symlinks).
pub(crate) fn is_file(root: &Path, relative: impl AsRef<Path>) -> bool {
    open_beneath(root, relative.as_ref(), FILE_FLAGS)
        .and_then(|fd| fstat(&fd).ok())
        .is_some_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
}

/// Names of the subdirectories of `relative` below `root`, at most `limit`, sorted.
pub(crate) fn subdirectories(root: &Path, relative: impl AsRef<Path>, limit: usize) -> Vec<String> {
    let Some(fd) = open_beneath(root, relative.as_ref(), DIR_FLAGS) else {
        return Vec::new();
    };
    let Ok(dir) = Dir::new(fd) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .filter(|entry| entry.file_type() == FileType::Directory)
        .filter_map(|entry| entry.file_name().to_str().ok().map(str::to_string))
        .filter(|name| name != "." && name != "..")
        .take(limit)
        .collect();
    names.sort();
    names
}

/// Files under `root` whose name ends in `extension`, skipping hidden and vendored
/// directories and never following symlinks. Paths are relative to `root`, sorted.
pub(crate) fn files_with_extension(root: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![(PathBuf::new(), 0usize)];
    while let Some((relative, depth)) = pending.pop() {
        let Ok(entries) = fs::read_dir(root.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = relative.join(&name);
            if kind.is_dir() {
                if depth < MAX_DEPTH
                    && !name.starts_with('.')
                    && !SKIP_DIRS.contains(&name.as_str())
                {
                    pending.push((path, depth + 1));
                }
            } else if kind.is_file() && name.ends_with(extension) {
                found.push(path);
                if found.len() >= MAX_FILES {
                    found.sort();
                    return found;
                }
            }
        }
    }
    found.sort();
    found
}
