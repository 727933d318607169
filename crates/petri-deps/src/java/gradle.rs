//! Gradle: `build.gradle` (Groovy DSL). The install runs the server's Gradle with a Gradle
//! home kept in the sandbox and an init script that resolves every classpath, so later
//! `gradle --offline ...` runs, and plain `javac`/`java`, find the jars without a network.

use std::path::Path;

use super::{CLASSPATH_FILE, DEPENDENCY_LIST};
use crate::scan::{is_file, read_file};
use crate::{DepPlan, Toolbox, fingerprint, shell_quote};

/// The Gradle home (caches, init scripts, properties) inside the sandbox.
pub(crate) const GRADLE_HOME: &str = "/sandbox/.petri/gradle";
const INIT_SCRIPT: &str = include_str!("petri.gradle");
/// Files whose change means the resolved dependencies may change.
const BUILD_FILES: [&str; 4] = [
    "build.gradle",
    "settings.gradle",
    "gradle.properties",
    "gradle/libs.versions.toml",
];

pub(crate) fn plan(workspace: &Path, tools: &Toolbox) -> Option<DepPlan> {
    if !is_file(workspace, "build.gradle") {
        let kotlin = is_file(workspace, "build.gradle.kts");
        return kotlin.then(|| notice(
            "build.gradle.kts",
            "Kotlin DSL builds are not installed automatically; add a build.gradle or a pom.xml",
        ));
    }
    let Some(gradle) = &tools.gradle else {
        return Some(notice(
            "build.gradle",
            "this server has no Gradle (install it, or set PETRI_GRADLE); dependencies were not installed",
        ));
    };
    let mut contents: Vec<Vec<u8>> = vec![b"gradle".to_vec()];
    contents.extend(
        BUILD_FILES
            .iter()
            .map(|name| read_file(workspace, name).unwrap_or_default()),
    );
    let parts: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    let manifest = String::from_utf8_lossy(&contents[1]).into_owned();
    let command = format!(
        "mkdir -p {GRADLE_HOME}/init.d /sandbox/.petri/java && \
         printf '%s' {script} > {GRADLE_HOME}/init.d/petri.gradle && \
         printf 'org.gradle.daemon=false\\n' > {GRADLE_HOME}/gradle.properties && \
         rm -f /sandbox/{DEPENDENCY_LIST} /sandbox/{CLASSPATH_FILE} && cd /sandbox && \
         {gradle} --no-daemon --console=plain -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 \
         '-Dhttp.nonProxyHosts=127.0.0.1|localhost' petriResolve",
        script = shell_quote(&init_script(tools)),
        gradle = shell_quote(gradle),
    );
    let env = vec![
        ("GRADLE_USER_HOME".to_string(), GRADLE_HOME.to_string()),
        (
            "PETRI_GRADLE_DEPENDENCIES".into(),
            format!("/sandbox/{DEPENDENCY_LIST}"),
        ),
        (
            "PETRI_GRADLE_CLASSPATH".into(),
            format!("/sandbox/{CLASSPATH_FILE}"),
        ),
    ];
    Some(DepPlan {
        source: "build.gradle".into(),
        packages: declared_dependencies(&manifest),
        missing_imports: Vec::new(),
        command,
        env,
        fingerprint: fingerprint(&parts),
    })
}

/// The init script, routing Maven Central through the server's mirror when there is one.
fn init_script(tools: &Toolbox) -> String {
    let mirror = tools.maven_repository.as_deref().unwrap_or("");
    INIT_SCRIPT.replace("@MIRROR@", &mirror.replace(['\'', '\\'], ""))
}

fn notice(source: &str, message: &str) -> DepPlan {
    DepPlan {
        source: source.into(),
        packages: Vec::new(),
        missing_imports: Vec::new(),
        command: format!(
            "echo {}",
            shell_quote(&format!("{source} found: {message}"))
        ),
        env: Vec::new(),
        fingerprint: fingerprint(&[b"gradle-notice", message.as_bytes()]),
    }
}

/// `group:artifact` of the string-notation dependencies in a Groovy build script, read
/// leniently (for reporting; Gradle itself decides what is resolved).
pub(crate) fn declared_dependencies(script: &str) -> Vec<String> {
    const CONFIGURATIONS: [&str; 8] = [
        "implementation",
        "api",
        "compileOnly",
        "runtimeOnly",
        "testImplementation",
        "testRuntimeOnly",
        "compile",
        "testCompile",
    ];
    script
        .lines()
        .take(10_000)
        .filter_map(|line| {
            let line = line.trim();
            let rest = CONFIGURATIONS
                .iter()
                .find_map(|conf| line.strip_prefix(conf))?;
            let rest = rest.trim_start_matches([' ', '(']);
            let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
            let notation = rest[1..].split(quote).next()?;
            let mut fields = notation.split(':');
            let (group, artifact) = (fields.next()?, fields.next()?);
            (!group.is_empty() && !artifact.is_empty()).then(|| format!("{group}:{artifact}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Toolbox {
        Toolbox {
            gradle: Some("/usr/bin/gradle".into()),
            maven_repository: Some("http://127.0.0.1:3128/maven2/".into()),
            ..Toolbox::default()
        }
    }

    #[test]
    fn build_gradle_is_resolved_through_the_init_script() {
        let ws = tempfile::tempdir().unwrap();
        let script = "plugins { id 'java' }\ndependencies {\n  implementation 'com.google.code.gson:gson:2.10.1'\n  testImplementation(\"junit:junit:4.13.2\")\n  implementation project(':core')\n}\n";
        std::fs::write(ws.path().join("build.gradle"), script).unwrap();
        let plan = plan(ws.path(), &tools()).unwrap();
        assert_eq!(plan.packages, ["com.google.code.gson:gson", "junit:junit"]);
        assert!(
            plan.command.contains("'/usr/bin/gradle' --no-daemon"),
            "{}",
            plan.command
        );
        assert!(plan.command.ends_with("petriResolve"));
        assert!(
            plan.command
                .contains(r"def petriMirror = '\''http://127.0.0.1:3128/maven2/'\''"),
            "{}",
            plan.command
        );
        assert!(
            plan.env
                .contains(&("GRADLE_USER_HOME".into(), GRADLE_HOME.into()))
        );
    }

    #[test]
    fn the_fingerprint_follows_settings_and_version_catalogs() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("build.gradle"), "plugins { id 'java' }").unwrap();
        let before = plan(ws.path(), &tools()).unwrap().fingerprint;
        std::fs::create_dir(ws.path().join("gradle")).unwrap();
        std::fs::write(ws.path().join("gradle/libs.versions.toml"), "[versions]").unwrap();
        assert_ne!(plan(ws.path(), &tools()).unwrap().fingerprint, before);
    }

    #[test]
    fn without_gradle_or_with_kotlin_dsl_a_notice_is_given() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(plan(ws.path(), &tools()), None);
        std::fs::write(ws.path().join("build.gradle.kts"), "plugins { java }").unwrap();
        let kotlin = plan(ws.path(), &tools()).unwrap();
        assert!(
            kotlin
                .command
                .starts_with("echo 'build.gradle.kts found: Kotlin DSL"),
            "{}",
            kotlin.command
        );
        std::fs::write(ws.path().join("build.gradle"), "").unwrap();
        let missing = plan(ws.path(), &Toolbox::default()).unwrap();
        assert!(
            missing.command.contains("this server has no Gradle"),
            "{}",
            missing.command
        );
    }

    #[test]
    fn the_init_script_survives_shell_quoting() {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s' {}",
                shell_quote(&init_script(&tools()))
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            init_script(&tools())
        );
    }
}
