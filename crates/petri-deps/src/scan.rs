//! Bounded, symlink-proof reading of a workspace written by untrusted code.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

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

/// A planted symlink fails instead of being followed, a planted FIFO cannot block the server.
const OPEN_FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// Reads a regular file without following a final symlink, at most `MAX_FILE_BYTES`.
pub(crate) fn read_file(path: &Path) -> Option<Vec<u8>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(OPEN_FLAGS)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Whether `path` is a regular file (not a symlink to one).
pub(crate) fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
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
