//! What an install actually put in the workspace, as a CycloneDX 1.5 bill of materials.
//!
//! Read from the installed tree (not the manifest), so it names exact versions, including
//! transitive dependencies. The tree was written by sandboxed code: reads are bounded and
//! never follow symlinks; a field that cannot be read is simply left out.

use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

mod go;
mod jvm;
mod licence;

use crate::python::normalise;
use crate::scan::{read_file, subdirectories};

/// Installed Python distributions, relative to the workspace.
const PYTHON_TARGET: &str = ".petri/python";
/// Most packages described in one bill.
const MAX_COMPONENTS: usize = 5_000;

/// One installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub ecosystem: &'static str,
    pub name: String,
    pub version: String,
    pub license: Option<String>,
    /// `(algorithm, hex digest)` of the downloaded archive, where the installer recorded one.
    pub hash: Option<(String, String)>,
    /// Where it was downloaded from, where recorded.
    pub source_url: Option<String>,
}

impl Component {
    fn purl(&self) -> String {
        match self.ecosystem {
            "golang" => format!("pkg:golang/{}@{}", self.name, self.version),
            "maven" => match self.name.split_once(':') {
                Some((group, artifact)) => format!("pkg:maven/{group}/{artifact}@{}", self.version),
                None => format!("pkg:maven/{}@{}", self.name, self.version),
            },
            "npm" => match self.name.strip_prefix('@') {
                Some(scoped) => format!("pkg:npm/%40{scoped}@{}", self.version),
                None => format!("pkg:npm/{}@{}", self.name, self.version),
            },
            _ => format!("pkg:pypi/{}@{}", normalise(&self.name), self.version),
        }
    }
}

/// Packages installed for `language` in `workspace`, sorted by name.
pub fn installed_components(language: &str, workspace: &Path) -> Vec<Component> {
    let mut components = match language {
        "python" => python_components(workspace),
        "node" => node_components(workspace),
        "go" => go::components(workspace),
        "java" => jvm::components(workspace),
        _ => Vec::new(),
    };
    components.sort_by(|a, b| {
        (a.name.to_ascii_lowercase(), &a.version).cmp(&(b.name.to_ascii_lowercase(), &b.version))
    });
    components.truncate(MAX_COMPONENTS);
    components
}

fn python_components(workspace: &Path) -> Vec<Component> {
    subdirectories(workspace, PYTHON_TARGET, MAX_COMPONENTS * 4)
        .into_iter()
        .filter(|name| name.ends_with(".dist-info"))
        .filter_map(|name| read_file(workspace, format!("{PYTHON_TARGET}/{name}/METADATA")))
        .filter_map(|bytes| python_metadata(&String::from_utf8_lossy(&bytes)))
        .collect()
}

/// Name, version and licence from core metadata headers (the part before the body).
fn python_metadata(text: &str) -> Option<Component> {
    let (mut name, mut version, mut license, mut classifier) = (None, None, None, None);
    for line in text.lines().take_while(|l| !l.is_empty()).take(2_000) {
        let Some((key, value)) = line.split_once(": ") else {
            continue;
        };
        let value = value.trim().to_string();
        match key {
            "Name" => name = Some(value),
            "Version" => version = Some(value),
            "License-Expression" => license = Some(value),
            "License" if license.is_none() && !value.is_empty() && value.len() < 100 => {
                license = Some(value)
            }
            "Classifier" if classifier.is_none() => {
                classifier = value
                    .strip_prefix("License :: OSI Approved :: ")
                    .map(str::to_string);
            }
            _ => {}
        }
    }
    Some(Component {
        ecosystem: "pypi",
        name: name?,
        version: version?,
        license: license.or(classifier),
        hash: None,
        source_url: None,
    })
}

fn node_components(workspace: &Path) -> Vec<Component> {
    let Some(bytes) = read_file(workspace, "node_modules/.package-lock.json") else {
        return Vec::new();
    };
    let Ok(lock) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    let Some(packages) = lock.get("packages").and_then(Value::as_object) else {
        return Vec::new();
    };
    packages
        .iter()
        .filter_map(|(path, entry)| {
            let name = path.rsplit_once("node_modules/")?.1.to_string();
            let field = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
            Some(Component {
                ecosystem: "npm",
                name,
                version: field("version")?,
                license: field("license"),
                hash: field("integrity").and_then(|sri| integrity_to_hex(&sri)),
                // Installs through the server's mirror record mirror URLs: name the registry.
                source_url: field("resolved").map(|url| {
                    url.replace("http://127.0.0.1:3128/npm/", "https://registry.npmjs.org/")
                }),
            })
        })
        .collect()
}

/// `sha512-<base64>` (Subresource Integrity) to `("SHA-512", hex)`.
fn integrity_to_hex(sri: &str) -> Option<(String, String)> {
    let (alg, digest) = sri.split_whitespace().next()?.split_once('-')?;
    let alg = match alg {
        "sha512" => "SHA-512",
        "sha384" => "SHA-384",
        "sha256" => "SHA-256",
        "sha1" => "SHA-1",
        _ => return None,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(digest)
        .ok()?;
    Some((
        alg.into(),
        bytes.iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// The CycloneDX 1.5 document for `components`. Deterministic: the same packages give the
/// same bytes (the serial number derives from the content), so identical installs share it.
pub fn cyclonedx(components: &[Component]) -> Value {
    let list: Vec<Value> = components
        .iter()
        .map(|c| {
            let mut entry = json!({
                "type": "library",
                "bom-ref": c.purl(),
                "name": c.name,
                "version": c.version,
                "purl": c.purl(),
            });
            if let Some(license) = &c.license {
                let is_id = !license.contains(' ') && license.len() <= 40;
                entry["licenses"] = if is_id {
                    json!([{ "expression": license }])
                } else {
                    json!([{ "license": { "name": license } }])
                };
            }
            if let Some((alg, content)) = &c.hash {
                entry["hashes"] = json!([{ "alg": alg, "content": content }]);
            }
            if let Some(url) = &c.source_url {
                entry["externalReferences"] = json!([{ "type": "distribution", "url": url }]);
            }
            entry
        })
        .collect();
    let digest = crate::fingerprint(&[serde_json::to_string(&list).unwrap_or_default().as_bytes()]);
    let serial = format!(
        "urn:uuid:{}-{}-4{}-8{}-{}",
        &digest[0..8],
        &digest[8..12],
        &digest[13..16],
        &digest[17..20],
        &digest[20..32]
    );
    json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": serial,
        "version": 1,
        "metadata": { "tools": { "components": [{ "type": "application", "name": "petri", "version": env!("CARGO_PKG_VERSION") }] } },
        "components": list,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_metadata_and_licences() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(".petri/python");
        for (dist, meta) in [
            (
                "six-1.16.0.dist-info",
                "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\nLicense: MIT\n\nbody: ignored\n",
            ),
            (
                "PyYAML-6.0.2.dist-info",
                "Name: PyYAML\nVersion: 6.0.2\nClassifier: License :: OSI Approved :: MIT License\n",
            ),
            ("broken.dist-info", "Name: nothing-else\n"),
        ] {
            std::fs::create_dir_all(target.join(dist)).unwrap();
            std::fs::write(target.join(dist).join("METADATA"), meta).unwrap();
        }
        let components = installed_components("python", dir.path());
        assert_eq!(components.len(), 2);
        assert_eq!(
            (components[0].name.as_str(), components[0].version.as_str()),
            ("PyYAML", "6.0.2")
        );
        assert_eq!(components[0].license.as_deref(), Some("MIT License"));
        let bom = cyclonedx(&components);
        assert_eq!(bom["bomFormat"], "CycloneDX");
        assert_eq!(bom["components"][1]["purl"], "pkg:pypi/six@1.16.0");
        assert_eq!(bom["components"][1]["licenses"][0]["expression"], "MIT");
        assert_eq!(cyclonedx(&components), bom, "deterministic");
    }

    #[test]
    fn npm_lockfile_gives_versions_sources_and_hashes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
        let lock = r#"{"packages": {"": {"name": "demo"}, "node_modules/@scope/pkg": {"version": "1.0.0"},
            "node_modules/is-number": {"version": "7.0.0", "license": "MIT",
              "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
              "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="}}}"#;
        std::fs::write(dir.path().join("node_modules/.package-lock.json"), lock).unwrap();
        let components = installed_components("node", dir.path());
        assert_eq!(components.len(), 2);
        assert_eq!(components[0].purl(), "pkg:npm/%40scope/pkg@1.0.0");
        let (alg, hex) = components[1].hash.clone().unwrap();
        assert_eq!(alg, "SHA-512");
        assert!(hex.starts_with("e350a27e483a7bc4"), "{hex}");
        assert_eq!(components[1].license.as_deref(), Some("MIT"));
    }
}
