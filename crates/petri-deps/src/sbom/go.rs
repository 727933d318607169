//! Go modules: pinned in `go.sum`, with the licence file each module ships in the sandbox's
//! module cache (Go modules declare their licence no other way).

use std::path::Path;

use base64::Engine as _;

use super::{Component, licence};
use crate::scan::read_file;

/// The module cache as seen from the host, relative to the workspace.
const HOST_MODULE_CACHE: &str = ".petri/go/mod";
const LICENCE_FILES: [&str; 5] = ["LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING"];

/// Modules pinned in `go.sum` (their `h1:` hash is a SHA-256 over the module's files).
pub(super) fn components(workspace: &Path) -> Vec<Component> {
    let Some(bytes) = read_file(workspace, "go.sum") else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (module, version, hash) = (parts.next()?, parts.next()?, parts.next()?);
            if version.ends_with("/go.mod") {
                return None;
            }
            let digest = base64::engine::general_purpose::STANDARD
                .decode(hash.strip_prefix("h1:")?)
                .ok()?;
            Some(Component {
                ecosystem: "golang",
                name: module.to_string(),
                version: version.to_string(),
                license: module_licence(workspace, module, version),
                hash: Some((
                    "SHA-256".into(),
                    digest.iter().map(|b| format!("{b:02x}")).collect(),
                )),
                source_url: None,
            })
        })
        .collect()
}

/// The licence of `module@version` as found in the module cache.
fn module_licence(workspace: &Path, module: &str, version: &str) -> Option<String> {
    let dir = format!(
        "{HOST_MODULE_CACHE}/{}@{}",
        escape(module)?,
        escape(version)?
    );
    LICENCE_FILES.iter().find_map(|name| {
        let text = read_file(workspace, format!("{dir}/{name}"))?;
        licence::from_text(&String::from_utf8_lossy(&text)).map(str::to_string)
    })
}

/// The module cache's case-encoding of a path (`Azure` is stored as `!azure`), for paths made
/// only of the characters module paths allow.
fn escape(path: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/+".contains(c);
    let traversal = path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..");
    if traversal || !path.chars().all(allowed) {
        return None;
    }
    Some(path.chars().fold(String::new(), |mut out, c| {
        if c.is_ascii_uppercase() {
            out.push('!');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::super::installed_components;

    #[test]
    fn go_sum_lists_modules_with_hashes_and_cached_licences() {
        let dir = tempfile::tempdir().unwrap();
        let sum = "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n\
                   github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n";
        std::fs::write(dir.path().join("go.sum"), sum).unwrap();
        let components = installed_components("go", dir.path());
        assert_eq!(components.len(), 1);
        assert_eq!(
            components[0].purl(),
            "pkg:golang/github.com/google/uuid@v1.6.0"
        );
        assert_eq!(components[0].hash.as_ref().unwrap().0, "SHA-256");
        assert_eq!(components[0].license, None);
        let cache = dir
            .path()
            .join(".petri/go/mod/github.com/google/uuid@v1.6.0");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(
            cache.join("LICENSE"),
            "Copyright (c) 2009,2014 Google Inc.\n\nRedistribution and use in source and binary forms, with or without\nmodification ... * Neither the name of Google Inc. nor the names",
        )
        .unwrap();
        let components = installed_components("go", dir.path());
        assert_eq!(components[0].license.as_deref(), Some("BSD-3-Clause"));
    }

    #[test]
    fn module_paths_are_case_encoded_and_never_escape_the_cache() {
        assert_eq!(
            super::escape("github.com/Azure/go").as_deref(),
            Some("github.com/!azure/go")
        );
        assert_eq!(super::escape("../../etc"), None);
        assert_eq!(super::escape("/etc"), None);
        assert_eq!(super::escape("a b"), None);
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join(".petri/go/x@v1");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(
            outside.join("LICENSE"),
            "Permission is hereby granted, free of charge",
        )
        .unwrap();
        assert_eq!(super::module_licence(dir.path(), "../x", "v1"), None);
    }
}
