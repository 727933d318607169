//! Project folders. `petri watch DIR` ties a folder to a sandbox and uploads it; `petri exec`
//! run inside the folder (or below it) first sends what changed since the last sync: changed
//! and new files in one zip, and deletions, so the sandbox mirrors the folder. What
//! `.gitignore` (and `.petriignore`) excludes is never sent, nor `.git`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The state file written in the watched folder.
pub const STATE_FILE: &str = ".petri-sandbox";
/// Most files one project may have (the server caps a zip at 10,000 entries by default).
const MAX_FILES: usize = 10_000;

/// Relative path (with `/`) to SHA-256 of the content.
pub type Snapshot = BTreeMap<String, String>;

/// A watched folder and what was last sent.
#[derive(Debug, Clone)]
pub struct Project {
    pub dir: PathBuf,
    pub sandbox: String,
    pub language: String,
    pub synced: Snapshot,
}

impl Project {
    /// The watched folder containing `start` (or `start` itself), if any.
    pub fn find(start: &Path) -> Result<Option<Self>, String> {
        for dir in start.ancestors() {
            let state = dir.join(STATE_FILE);
            if state.is_file() {
                return Self::load(dir, &state).map(Some);
            }
        }
        Ok(None)
    }

    fn load(dir: &Path, state: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(state)
            .map_err(|e| format!("cannot read {}: {e}", state.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a Petri state file: {e}", state.display()))?;
        let field = |name: &str| value[name].as_str().map(str::to_string);
        Ok(Self {
            dir: dir.to_path_buf(),
            sandbox: field("sandbox")
                .ok_or_else(|| format!("{} names no sandbox", state.display()))?,
            language: field("language").unwrap_or_else(|| "python".into()),
            synced: value["files"]
                .as_object()
                .map(|files| {
                    files
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    pub fn save(&self) -> Result<(), String> {
        let state = self.dir.join(STATE_FILE);
        let body = json!({
            "sandbox": self.sandbox,
            "language": self.language,
            "files": self.synced,
        });
        std::fs::write(
            &state,
            serde_json::to_string_pretty(&body).unwrap_or_default(),
        )
        .map_err(|e| format!("cannot write {}: {e}", state.display()))
    }
}

/// The language a folder's manifests suggest.
pub fn detect_language(dir: &Path) -> &'static str {
    let has = |name: &str| dir.join(name).is_file();
    if has("package.json") {
        "node"
    } else if has("go.mod") {
        "go"
    } else if has("pom.xml") || has("build.gradle") || has("build.gradle.kts") {
        "java"
    } else {
        "python"
    }
}

/// Every file of `dir` that would be sent, with its content hash. Symlinks are not followed.
pub fn scan(dir: &Path) -> Result<Snapshot, String> {
    let mut snapshot = Snapshot::new();
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .git_global(false)
        .add_custom_ignore_filename(".petriignore")
        .filter_entry(|entry| {
            let name = entry.file_name();
            name != ".git" && name != STATE_FILE
        })
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(dir)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .replace('\\', "/");
        let content = std::fs::read(entry.path())
            .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
        let digest: String = Sha256::digest(&content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        snapshot.insert(relative, digest);
        if snapshot.len() > MAX_FILES {
            return Err(format!(
                "{} has more than {MAX_FILES} files to send; exclude some in .gitignore or .petriignore",
                dir.display()
            ));
        }
    }
    Ok(snapshot)
}

/// What changed between `before` and `now`: files to send and files to delete.
pub fn changes(before: &Snapshot, now: &Snapshot) -> (Vec<String>, Vec<String>) {
    let changed = now
        .iter()
        .filter(|(path, hash)| before.get(*path) != Some(*hash))
        .map(|(path, _)| path.clone())
        .collect();
    let removed = before
        .keys()
        .filter(|path| !now.contains_key(*path))
        .cloned()
        .collect();
    (changed, removed)
}

/// A zip of `files` (relative to `dir`), in memory.
pub fn zip_files(dir: &Path, files: &[String]) -> Result<Vec<u8>, String> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for file in files {
        let content =
            std::fs::read(dir.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
        writer
            .start_file(file.as_str(), options)
            .and_then(|()| writer.write_all(&content).map_err(Into::into))
            .map_err(|e| format!("cannot zip {file}: {e}"))?;
    }
    let cursor = writer.finish().map_err(|e| format!("cannot zip: {e}"))?;
    Ok(cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_files_and_git_are_not_sent_and_changes_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::write(root.join("node_modules/x/i.js"), "x").unwrap();
        std::fs::write(root.join(".gitignore"), "node_modules/\n*.log\n").unwrap();
        std::fs::write(root.join("debug.log"), "noise").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.py"), "print(1)").unwrap();
        std::fs::write(root.join(".env.example"), "A=1").unwrap();
        std::fs::write(root.join(STATE_FILE), "{}").unwrap();
        let first = scan(root).unwrap();
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            [".env.example", ".gitignore", "src/main.py"]
        );
        std::fs::write(root.join("src/main.py"), "print(2)").unwrap();
        std::fs::remove_file(root.join(".env.example")).unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        let (changed, removed) = changes(&first, &scan(root).unwrap());
        assert_eq!(changed, ["new.txt", "src/main.py"]);
        assert_eq!(removed, [".env.example"]);
    }

    #[test]
    fn the_language_follows_the_manifests() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect_language(dir.path()), "python");
        std::fs::write(dir.path().join("go.mod"), "module x").unwrap();
        assert_eq!(detect_language(dir.path()), "go");
    }
}
