//! Maven and Gradle installs: the artifact list the install wrote, with SHA-1 checksums and
//! the licences declared in the artifacts' POMs (following parent POMs, where most projects
//! declare them).

use std::path::Path;

use super::{Component, licence};
use crate::java::{DEPENDENCY_LIST, HOST_GRADLE_FILES, HOST_REPOSITORY};
use crate::scan::{read_file, subdirectories};

/// Deepest chain of parent POMs followed for a licence.
const MAX_PARENTS: usize = 6;

/// A Maven coordinate whose parts are plain names (no separators, nothing to escape a path).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Coordinate {
    group: String,
    artifact: String,
    version: String,
}

impl Coordinate {
    fn new(group: &str, artifact: &str, version: &str) -> Option<Self> {
        let plain = |s: &str| {
            !s.is_empty()
                && !s.starts_with('.')
                && s.len() <= 200
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        (plain(group) && plain(artifact) && plain(version)).then(|| Self {
            group: group.into(),
            artifact: artifact.into(),
            version: version.into(),
        })
    }

    fn file_name(&self, extension: &str) -> String {
        format!("{}-{}.{extension}", self.artifact, self.version)
    }

    /// The file in the sandbox's Maven repository, else in its Gradle cache (where each file
    /// sits in a directory named after its checksum).
    fn read(&self, workspace: &Path, extension: &str) -> Option<Vec<u8>> {
        let name = self.file_name(extension);
        let maven = format!(
            "{HOST_REPOSITORY}/{}/{}/{}/{name}",
            self.group.replace('.', "/"),
            self.artifact,
            self.version
        );
        read_file(workspace, maven).or_else(|| {
            let gradle = format!(
                "{HOST_GRADLE_FILES}/{}/{}/{}",
                self.group, self.artifact, self.version
            );
            subdirectories(workspace, &gradle, 16)
                .into_iter()
                .find_map(|checksum| read_file(workspace, format!("{gradle}/{checksum}/{name}")))
        })
    }
}

/// Artifacts listed by `mvn dependency:list` or by Petri's Gradle init script.
pub(super) fn components(workspace: &Path) -> Vec<Component> {
    let Some(bytes) = read_file(workspace, DEPENDENCY_LIST) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.trim().split(':').collect();
            let [group, artifact, kind, version, _scope, rest @ ..] = fields.as_slice() else {
                return None;
            };
            let coordinate = Coordinate::new(group, artifact, version)?;
            Coordinate::new(group, kind, version)?;
            let is_sha1 = |h: &String| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit());
            let first_word = |text: &str| text.split_whitespace().next().unwrap_or("").to_string();
            let hash = rest
                .first()
                .map(|h| first_word(h))
                .filter(is_sha1)
                .or_else(|| {
                    let sum = coordinate.read(workspace, &format!("{kind}.sha1"))?;
                    Some(first_word(&String::from_utf8_lossy(&sum))).filter(is_sha1)
                })
                .map(|h| ("SHA-1".to_string(), h));
            Some(Component {
                ecosystem: "maven",
                name: format!("{group}:{artifact}"),
                version: version.to_string(),
                license: declared_licence(workspace, &coordinate),
                hash,
                source_url: None,
            })
        })
        .collect()
}

/// The first `<licenses>` found walking from the artifact's POM up its parents.
fn declared_licence(workspace: &Path, coordinate: &Coordinate) -> Option<String> {
    let mut current = coordinate.clone();
    for _ in 0..MAX_PARENTS {
        let pom = current.read(workspace, "pom")?;
        let pom = String::from_utf8_lossy(&pom);
        if let Some(licences) = element(&pom, "licenses") {
            let names: Vec<String> = licences
                .split("<license>")
                .skip(1)
                .take(8)
                .filter_map(|entry| element(entry, "name"))
                .filter_map(licence::from_name)
                .collect();
            if !names.is_empty() {
                return Some(names.join(" OR "));
            }
        }
        let parent = element(&pom, "parent")?;
        current = Coordinate::new(
            element(parent, "groupId")?,
            element(parent, "artifactId")?,
            element(parent, "version")?,
        )?;
    }
    None
}

/// The text of the first `<name>...</name>` in `xml`, trimmed (a lenient read: POMs here are
/// only mined for facts, never trusted).
fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let end = xml[start..].find(&format!("</{name}>"))? + start;
    Some(xml[start..end].trim())
}

#[cfg(test)]
mod tests {
    use super::super::installed_components;

    fn write(root: &std::path::Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn maven_list_with_checksums_and_inherited_licences() {
        let dir = tempfile::tempdir().unwrap();
        let list = "\nThe following files have been resolved:\n   org.apache.commons:commons-lang3:jar:3.14.0:compile -- module org.apache.commons.lang3\n   bad:../x:jar:1:compile\n";
        write(dir.path(), ".petri/java/dependencies.txt", list);
        let m2 = ".petri/m2/org/apache/commons";
        write(
            dir.path(),
            &format!("{m2}/commons-lang3/3.14.0/commons-lang3-3.14.0.jar.sha1"),
            "1ed471194b02f2c6cb734a0cd6f6f107c673afae",
        );
        write(
            dir.path(),
            &format!("{m2}/commons-lang3/3.14.0/commons-lang3-3.14.0.pom"),
            "<project><parent><groupId>org.apache.commons</groupId><artifactId>commons-parent</artifactId><version>64</version></parent></project>",
        );
        write(
            dir.path(),
            &format!("{m2}/commons-parent/64/commons-parent-64.pom"),
            "<project><licenses><license><name>Apache-2.0</name></license></licenses></project>",
        );
        let components = installed_components("java", dir.path());
        assert_eq!(components.len(), 1);
        assert_eq!(
            components[0].purl(),
            "pkg:maven/org.apache.commons/commons-lang3@3.14.0"
        );
        assert_eq!(
            components[0].hash.as_ref().unwrap().1,
            "1ed471194b02f2c6cb734a0cd6f6f107c673afae"
        );
        assert_eq!(components[0].license.as_deref(), Some("Apache-2.0"));
    }

    #[test]
    fn gradle_list_carries_its_checksums_and_poms_come_from_gradles_cache() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            ".petri/java/dependencies.txt",
            "com.google.code.gson:gson:jar:2.10.1:compile:b3add478d4382b78ea20b1671390a858002feb6c\n",
        );
        write(
            dir.path(),
            ".petri/gradle/caches/modules-2/files-2.1/com.google.code.gson/gson/2.10.1/0123abcd/gson-2.10.1.pom",
            "<project><licenses><license><name>Apache-2.0</name></license></licenses></project>",
        );
        let components = installed_components("java", dir.path());
        assert_eq!(components[0].name, "com.google.code.gson:gson");
        assert_eq!(
            components[0].hash.as_ref().unwrap().1,
            "b3add478d4382b78ea20b1671390a858002feb6c"
        );
        assert_eq!(components[0].license.as_deref(), Some("Apache-2.0"));
    }

    #[test]
    fn a_repository_swapped_for_a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        write(
            host.path(),
            "g/a/1/a-1.pom",
            "<project><licenses><license><name>HOST SECRET</name></license></licenses></project>",
        );
        write(
            dir.path(),
            ".petri/java/dependencies.txt",
            "g:a:jar:1:compile\n",
        );
        std::os::unix::fs::symlink(host.path(), dir.path().join(".petri/m2")).unwrap();
        let components = installed_components("java", dir.path());
        assert_eq!(components.len(), 1);
        assert_eq!(components[0].license, None);
    }
}
