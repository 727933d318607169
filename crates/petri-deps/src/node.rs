//! Node: `package.json`, installed with `npm ci` when a lockfile pins the tree, else
//! `npm install`, into the project's own `node_modules` (where Node looks by itself).

use std::path::Path;

use crate::scan::{is_file, read_file};
use crate::{DepPlan, DepsError, fingerprint};

/// Dependency names of a `package.json` (`dependencies`, then `devDependencies`). Hostile
/// input: anything that is not an object of string keys is ignored.
pub(crate) fn dependency_names(manifest: &serde_json::Value) -> Vec<String> {
    let mut names = Vec::new();
    for section in ["dependencies", "devDependencies"] {
        if let Some(deps) = manifest.get(section).and_then(|d| d.as_object()) {
            names.extend(deps.keys().take(10_000).filter(|k| k.len() <= 214).cloned());
        }
    }
    names
}

pub(crate) fn plan(workspace: &Path) -> Result<Option<DepPlan>, DepsError> {
    let manifest_path = workspace.join("package.json");
    if !is_file(&manifest_path) {
        return Ok(None);
    }
    let manifest = read_file(&manifest_path).unwrap_or_default();
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap_or_default();
    let packages = dependency_names(&parsed);
    if packages.is_empty() {
        return Ok(None);
    }
    let lock_path = workspace.join("package-lock.json");
    let (lock, verb) = if is_file(&lock_path) {
        (read_file(&lock_path).unwrap_or_default(), "ci")
    } else {
        (Vec::new(), "install")
    };
    let command = format!("cd /sandbox && npm {verb} --no-audit --no-fund --loglevel=http");
    Ok(Some(DepPlan {
        source: if verb == "ci" {
            "package-lock.json"
        } else {
            "package.json"
        }
        .into(),
        packages,
        missing_imports: Vec::new(),
        command,
        env: vec![
            (
                "npm_config_cache".into(),
                "/sandbox/.petri/cache/npm".into(),
            ),
            ("npm_config_update_notifier".into(), "false".into()),
        ],
        fingerprint: fingerprint(&[b"npm", &manifest, &lock]),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfile_selects_npm_ci_and_changes_the_fingerprint() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            ws.path().join("package.json"),
            r#"{"dependencies": {"is-number": "^7.0.0"}, "devDependencies": {"left-pad": "1"}}"#,
        )
        .unwrap();
        let plain = plan(ws.path()).unwrap().unwrap();
        assert_eq!(plain.packages, ["is-number", "left-pad"]);
        assert!(plain.command.contains("npm install"));
        std::fs::write(ws.path().join("package-lock.json"), "{}").unwrap();
        let locked = plan(ws.path()).unwrap().unwrap();
        assert!(locked.command.contains("npm ci"));
        assert_ne!(locked.fingerprint, plain.fingerprint);
    }

    #[test]
    fn hostile_or_empty_manifests_plan_nothing() {
        let ws = tempfile::tempdir().unwrap();
        for text in [
            "",
            "[]",
            "{\"dependencies\": [1, 2]}",
            "{\"dependencies\": {}}",
            "{{{{",
        ] {
            std::fs::write(ws.path().join("package.json"), text).unwrap();
            assert_eq!(plan(ws.path()).unwrap(), None, "{text}");
        }
    }
}
