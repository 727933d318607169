//! Java: `pom.xml` (Maven), else `build.gradle` (Gradle, in `gradle.rs`). The install resolves
//! the project's dependencies and the plugins its build needs into a per-sandbox repository,
//! so `mvn -o ...` works without a network, and writes the dependency classpath so plain
//! `javac`/`java` see the jars too.

mod gradle;

use std::path::Path;

use crate::scan::{is_file, read_file};
use crate::{DepPlan, DepsError, Toolbox, fingerprint};

const REPOSITORY: &str = "/sandbox/.petri/m2";
const CLASSPATH_FILE: &str = ".petri/java/classpath.txt";
/// `group:artifact:type:version:scope[:sha1]` lines written by the install, read for the SBOM.
pub(crate) const DEPENDENCY_LIST: &str = ".petri/java/dependencies.txt";
/// The repository as seen from the host, relative to the workspace.
pub(crate) const HOST_REPOSITORY: &str = ".petri/m2";
/// Gradle's downloaded files as seen from the host, relative to the workspace.
pub(crate) const HOST_GRADLE_FILES: &str = ".petri/gradle/caches/modules-2/files-2.1";
/// Longest classpath passed through the environment.
const MAX_CLASSPATH: usize = 64 * 1024;

/// Maven reads proxies and mirrors only from a settings file; this one is written by the
/// install command itself, inside the sandbox, next to the repository. With the server's
/// repository mirror everything comes from it (a cache every sandbox shares); otherwise
/// through the CONNECT proxy.
fn settings(tools: &Toolbox) -> String {
    let route = match &tools.maven_repository {
        Some(mirror) => format!(
            // Named `central` so artifacts count as downloaded from Central, which is what a
            // later offline `mvn -o` (without this settings file) checks.
            "<mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf><url>{mirror}</url></mirror></mirrors>"
        ),
        None => "<proxies><proxy><id>petri</id><active>true</active><protocol>https</protocol>\
                 <host>127.0.0.1</host><port>3128</port></proxy></proxies>"
            .to_string(),
    };
    format!("<settings><localRepository>{REPOSITORY}</localRepository>{route}</settings>")
}

pub(crate) fn plan(workspace: &Path, tools: &Toolbox) -> Result<Option<DepPlan>, DepsError> {
    if !is_file(workspace, "pom.xml") {
        return Ok(gradle::plan(workspace, tools));
    }
    let manifest = read_file(workspace, "pom.xml").unwrap_or_default();
    let command = format!(
        "mkdir -p /sandbox/.petri/java && printf '%s' '{}' > /sandbox/.petri/maven-settings.xml && cd /sandbox && \
         mvn -B -ntp -s /sandbox/.petri/maven-settings.xml dependency:go-offline test \
         '-Dtest=*#petriResolvesTheTestRunnerOnly' -Dsurefire.failIfNoSpecifiedTests=false \
         dependency:build-classpath -Dmdep.outputFile=/sandbox/{CLASSPATH_FILE} \
         dependency:list -DoutputFile=/sandbox/{DEPENDENCY_LIST} -DexcludeTransitive=false",
        settings(tools)
    );
    Ok(Some(DepPlan {
        source: "pom.xml".into(),
        packages: declared_artifacts(&String::from_utf8_lossy(&manifest)),
        missing_imports: Vec::new(),
        command,
        env: Vec::new(),
        fingerprint: fingerprint(&[b"maven", &manifest]),
    }))
}

/// Environment of every Java exec: Maven and Gradle find the sandbox's caches, and
/// `javac`/`java` find the dependency jars (plus the current directory and the build's output).
pub(crate) fn runtime_env(workspace: &Path) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "MAVEN_OPTS".to_string(),
            format!("-Dmaven.repo.local={REPOSITORY}"),
        ),
        (
            "GRADLE_USER_HOME".to_string(),
            gradle::GRADLE_HOME.to_string(),
        ),
    ];
    if let Some(bytes) = read_file(workspace, CLASSPATH_FILE) {
        let jars = String::from_utf8_lossy(&bytes);
        let jars = jars.trim().trim_end_matches(':');
        if !jars.is_empty() && jars.len() <= MAX_CLASSPATH && !jars.contains('\0') {
            env.push((
                "CLASSPATH".into(),
                format!(".:/sandbox/target/classes:/sandbox/build/classes/java/main:{jars}"),
            ));
        }
    }
    env
}

/// `groupId:artifactId` of each `<dependency>` in a POM, read leniently.
pub(crate) fn declared_artifacts(pom: &str) -> Vec<String> {
    let tag = |block: &str, name: &str| -> Option<String> {
        let start = block.find(&format!("<{name}>"))? + name.len() + 2;
        let end = block[start..].find(&format!("</{name}>"))? + start;
        Some(block[start..end].trim().to_string())
    };
    pom.split("<dependency>")
        .skip(1)
        .take(10_000)
        .filter_map(|block| {
            let block = block.split("</dependency>").next()?;
            Some(format!(
                "{}:{}",
                tag(block, "groupId")?,
                tag(block, "artifactId")?
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pom_dependencies_and_plan() {
        let ws = tempfile::tempdir().unwrap();
        let pom = "<project><dependencies><dependency><groupId>org.apache.commons</groupId>\
                   <artifactId>commons-lang3</artifactId><version>3.14.0</version></dependency>\
                   <dependency><groupId>junit</groupId></dependency></dependencies></project>";
        std::fs::write(ws.path().join("pom.xml"), pom).unwrap();
        let plan = plan(ws.path(), &Toolbox::default()).unwrap().unwrap();
        assert_eq!(plan.packages, ["org.apache.commons:commons-lang3"]);
        assert!(
            plan.command
                .contains("dependency:go-offline test '-Dtest=*#petriResolvesTheTestRunnerOnly'")
        );
        assert!(plan.command.contains("<port>3128</port>"));
        assert!(
            plan.command
                .contains("dependency:list -DoutputFile=/sandbox/.petri/java/dependencies.txt")
        );
    }

    #[test]
    fn classpath_comes_from_the_install() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(runtime_env(ws.path()).len(), 2);
        std::fs::create_dir_all(ws.path().join(".petri/java")).unwrap();
        // Gradle's init script appends one `...:` run per project.
        std::fs::write(
            ws.path().join(CLASSPATH_FILE),
            "/sandbox/.petri/m2/a.jar:\n",
        )
        .unwrap();
        let env = runtime_env(ws.path());
        assert_eq!(
            env[2],
            (
                "CLASSPATH".into(),
                ".:/sandbox/target/classes:/sandbox/build/classes/java/main:/sandbox/.petri/m2/a.jar"
                    .into()
            )
        );
    }
}
