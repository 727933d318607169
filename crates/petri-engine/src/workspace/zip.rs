//! Zip extraction that treats the archive as hostile: names are validated like any client
//! path, symlink entries are refused, entry count and real (not declared) uncompressed size
//! are capped, and everything lands in a private staging tree before it touches the workspace.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use crate::EngineError;
use crate::workspace::RelPath;
use crate::workspace::fs::{
    Owner, create_temp, make_dir, merge_tree, open_dir, place, remove_tree,
};

const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// Caps on one archive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ZipLimits {
    pub max_entries: usize,
    pub max_bytes: u64,
}

fn invalid_zip(reason: impl Into<String>) -> EngineError {
    EngineError::InvalidZip {
        reason: reason.into(),
    }
}

fn too_large(limits: ZipLimits) -> EngineError {
    EngineError::TooLarge {
        what: "uncompressed zip content".into(),
        limit: format!("{} bytes (PETRI_ZIP_MAX_MB)", limits.max_bytes),
    }
}

/// One validated entry of the archive.
struct Entry {
    index: usize,
    path: RelPath,
    is_dir: bool,
}

fn validate(
    archive: &mut zip::ZipArchive<std::fs::File>,
    limits: ZipLimits,
) -> Result<Vec<Entry>, EngineError> {
    if archive.len() > limits.max_entries {
        return Err(EngineError::TooLarge {
            what: format!("zip with {} entries", archive.len()),
            limit: format!("{} entries (PETRI_ZIP_MAX_ENTRIES)", limits.max_entries),
        });
    }
    let mut declared: u64 = 0;
    let mut entries = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let file = archive
            .by_index_raw(index)
            .map_err(|e| invalid_zip(format!("entry {index}: {e}")))?;
        let name = std::str::from_utf8(file.name_raw())
            .map_err(|_| invalid_zip(format!("entry {index} has a name that is not UTF-8")))?
            .to_string();
        if file
            .unix_mode()
            .is_some_and(|mode| mode & S_IFMT == S_IFLNK)
        {
            return Err(EngineError::InvalidPath {
                path: name,
                reason: "is a symlink entry; archives may only hold files and directories".into(),
            });
        }
        let is_dir = file.is_dir();
        let path = RelPath::parse(name.trim_end_matches('/'))?;
        declared = declared.saturating_add(file.size());
        if declared > limits.max_bytes {
            return Err(too_large(limits));
        }
        entries.push(Entry {
            index,
            path,
            is_dir,
        });
    }
    Ok(entries)
}

/// Extracts `archive_path` into a fresh staging directory inside `workspace` (the same
/// filesystem, so its disk quota counts the staged bytes and entries move in by rename; the
/// directory is the server's, so sandboxed code cannot add entries to it meanwhile), then
/// merges it into the workspace. Returns the number of files written. On any error the
/// workspace is unchanged.
pub(crate) fn extract(
    archive_path: &Path,
    workspace: &OwnedFd,
    limits: ZipLimits,
    owner: Owner,
) -> Result<usize, EngineError> {
    let file = std::fs::File::open(archive_path).map_err(EngineError::io(format!(
        "cannot open {}",
        archive_path.display()
    )))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| invalid_zip(format!("not a readable zip archive ({e})")))?;
    let entries = validate(&mut archive, limits)?;

    let staging_name = format!(".petri-zip-{}", crate::ids::new_run_id());
    let staging_fd = make_dir(workspace, &staging_name, Owner::default(), &staging_name)?;
    let result = (|| {
        let mut files = 0;
        let mut budget = limits.max_bytes;
        for entry in &entries {
            let shown = entry.path.display();
            if entry.is_dir {
                open_dir(&staging_fd, entry.path.components(), Some(owner), &shown)
                    .map_err(|e| conflict(e, &shown))?;
                continue;
            }
            let (parents, name) = entry.path.split_last();
            let dir = open_dir(&staging_fd, parents, Some(owner), &shown)
                .map_err(|e| conflict(e, &shown))?;
            let (temp, mut out) = create_temp(&dir, owner)?;
            let mut reader = archive
                .by_index(entry.index)
                .map_err(|e| invalid_zip(format!("entry {shown:?}: {e}")))?;
            // Count what really decompresses: declared sizes are attacker-controlled.
            let mut limited = (&mut reader).take(budget + 1);
            let written = std::io::copy(&mut limited, &mut out)
                .map_err(|e| invalid_zip(format!("entry {shown:?} is corrupt: {e}")))?;
            if written > budget {
                return Err(too_large(limits));
            }
            budget -= written;
            out.flush()
                .map_err(EngineError::io("writing staged zip entry"))?;
            place(&dir, &temp, &dir, name, &shown).map_err(|e| conflict(e, &shown))?;
            files += 1;
        }
        merge_tree(&staging_fd, Some(workspace), "", true, owner)?;
        merge_tree(&staging_fd, Some(workspace), "", false, owner)?;
        Ok(files)
    })();
    drop(staging_fd);
    let _ = remove_tree(workspace, &staging_name);
    result
}

/// Inside the staging tree a path error can only come from the archive contradicting itself.
fn conflict(error: EngineError, shown: &str) -> EngineError {
    match error {
        EngineError::InvalidPath { .. } => invalid_zip(format!(
            "entry {shown:?} conflicts with another entry of the archive"
        )),
        other => other,
    }
}
