//! The dependency step of an exec: detect, skip when unchanged since the last successful
//! install, otherwise install inside the same sandbox with registry-only network, streaming
//! the installer's lines as `install` events (never as program output).

use std::sync::Arc;

use petri_egress::{PROXY_PORT, ProxyTag};
use petri_sandbox::{ExecSpec, Network};
use serde::Serialize;

use super::ExecEvent;
use super::runner::ExecJob;
use super::supervise::{Collected, Stop, Supervised, Watch, supervise};
use crate::Engine;
use crate::ids::{format_time, now};
use petri_store::InstallRecord;

/// What the dependency step did, reported in `done` as `install`.
#[derive(Debug, Clone, Serialize)]
pub struct InstallSummary {
    /// `pyproject.toml`, `requirements.txt` or `imports`.
    pub source: String,
    pub packages: Vec<String>,
    /// Third-party imports the manifest does not list (installed as a best effort).
    pub missing_imports: Vec<String>,
    /// False when nothing changed since the last successful install and it was skipped.
    pub installed: bool,
    pub duration_ms: u64,
}

/// Outcome of the dependency step.
#[derive(Debug)]
pub(crate) enum InstallStep {
    /// Nothing to install for this workspace.
    NotNeeded,
    /// Dependencies are in place (installed now or earlier).
    Ready(InstallSummary),
    /// The install failed; the command must not run.
    Failed {
        summary: InstallSummary,
        outcome: Supervised,
        error: String,
    },
}

fn plural(items: &[String]) -> &'static str {
    if items.len() == 1 { "it" } else { "them" }
}

pub(crate) async fn prepare(engine: &Arc<Engine>, job: &ExecJob, run_id: &str) -> InstallStep {
    let sandbox_id = job.sandbox.id.clone();
    let workspace = engine.workspaces.path(&sandbox_id);
    let language = job.sandbox.language.clone();
    let tools = engine.config.toolbox.clone();
    let planned =
        tokio::task::spawn_blocking(move || petri_deps::plan(&language, &workspace, &tools)).await;
    let plan = match planned {
        Ok(Ok(Some(plan))) => plan,
        Ok(Ok(None)) => return InstallStep::NotNeeded,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, sandbox_id, "dependency detection failed");
            return InstallStep::NotNeeded;
        }
        Err(e) => {
            tracing::error!(error = %e, sandbox_id, "dependency detection panicked");
            return InstallStep::NotNeeded;
        }
    };
    let mut summary = InstallSummary {
        source: plan.source.clone(),
        packages: plan.packages.clone(),
        missing_imports: plan.missing_imports.clone(),
        installed: false,
        duration_ms: 0,
    };
    let lookup = sandbox_id.clone();
    let current = engine
        .db(move |store| store.install_fingerprint(&lookup))
        .await;
    if current.ok().flatten().as_deref() == Some(plan.fingerprint.as_str()) {
        // Unchanged dependencies: this run shares the bill of materials of the last install.
        let (lookup, run) = (sandbox_id.clone(), run_id.to_string());
        let linked = engine
            .db(move |store| match store.install_sbom_id(&lookup)? {
                Some(sbom_id) => store.set_run_sbom(&run, &sbom_id),
                None => Ok(()),
            })
            .await;
        if let Err(e) = linked {
            tracing::warn!(error = %e, "cannot link a run to its bill of materials");
        }
        return InstallStep::Ready(summary);
    }

    let announce = |line: String| {
        let _ = job.events.send(ExecEvent::Install(line));
    };
    announce(format!(
        "installing dependencies from {}: {}\n",
        plan.source,
        if plan.packages.is_empty() {
            "(project)".to_string()
        } else {
            plan.packages.join(", ")
        }
    ));
    if !plan.missing_imports.is_empty() {
        announce(format!(
            "{} does not list {} (imported by the code); installing {} too\n",
            plan.source,
            plan.missing_imports.join(", "),
            plural(&plan.missing_imports)
        ));
    }
    let Some(egress) = &engine.egress else {
        return InstallStep::Failed {
            summary,
            outcome: Supervised::not_started("no registry egress"),
            error:
                "dependency install unavailable: this server has no registry egress (it needs root)"
                    .into(),
        };
    };
    let spec = engine.sandbox_spec(&job.sandbox);
    // The plan's settings win over the runtime ones (later variables override earlier).
    let mut env = petri_deps::runtime_env(
        &job.sandbox.language,
        &engine.workspaces.path(&job.sandbox.id),
    );
    env.extend(plan.env.clone());
    let exec = ExecSpec {
        command: plan.command.clone(),
        env,
        test: None,
        network: Network::RegistryProxy { port: PROXY_PORT },
    };
    let mut process = match engine.backend.spawn(&spec, &exec) {
        Ok(process) => process,
        Err(e) => {
            tracing::error!(error = %e, sandbox_id, "install sandbox failed to start");
            return InstallStep::Failed {
                summary,
                outcome: Supervised::not_started("install sandbox failed to start"),
                error: "dependency install failed: the install sandbox did not start (the server log has the cause)".into(),
            };
        }
    };
    let tag = ProxyTag {
        sandbox_id: sandbox_id.clone(),
        run_id: run_id.to_string(),
    };
    let serving = process
        .take_proxy_listener()
        .and_then(|listener| egress.serve(listener, tag, engine.audit.clone()).ok());
    let mut collected = Collected::install(job.events.clone());
    let timeout = engine.config.install_timeout;
    let outcome = supervise(
        engine,
        &job.slot,
        &sandbox_id,
        process,
        &mut collected,
        None,
        Watch::deadline(timeout),
    )
    .await;
    if let Some(serving) = serving {
        serving.abort();
    }
    summary.duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX);
    if outcome.start_error.is_none() && outcome.stop.is_none() && outcome.exit_code == 0 {
        // Installers write lockfiles (npm's package-lock.json, go.sum): remember the state
        // they leave, or the next exec would see a "changed" manifest and install again.
        let settled = settled_fingerprint(engine, job).await;
        let sbom = bill_of_materials(engine, job).await;
        let at = format_time(now());
        let install = InstallRecord {
            sandbox_id,
            fingerprint: settled.unwrap_or(plan.fingerprint),
            source: plan.source,
            installed_at: at.clone(),
            run_id: run_id.to_string(),
            sbom_id: sbom.as_ref().map(|(id, _)| id.clone()),
        };
        let recorded = engine
            .db(move |store| {
                if let Some((id, document)) = &sbom {
                    store.save_sbom(id, document, &at)?;
                    store.set_run_sbom(&install.run_id, id)?;
                }
                store.record_install(&install)
            })
            .await;
        if let Err(e) = recorded {
            tracing::error!(error = %e, "cannot record a successful install");
        }
        summary.installed = true;
        return InstallStep::Ready(summary);
    }
    let error = match outcome.stop {
        Some(Stop::TimedOut) => format!(
            "dependency install timed out after {} seconds",
            timeout.as_secs()
        ),
        Some(Stop::SandboxGone) => {
            "killed: the sandbox was deleted during the dependency install".into()
        }
        Some(Stop::Shutdown) => "interrupted: the server is shutting down".into(),
        Some(Stop::Killed) => "killed: stopped through the API".into(),
        None => match headline(&collected.text).or(collected.last_line.as_deref()) {
            Some(line) => format!("dependency install failed: {line}"),
            None => format!(
                "dependency install failed with exit code {}",
                outcome.exit_code
            ),
        },
    };
    InstallStep::Failed {
        summary,
        outcome,
        error,
    }
}

/// The plan's fingerprint as the workspace stands now.
async fn settled_fingerprint(engine: &Engine, job: &ExecJob) -> Option<String> {
    let workspace = engine.workspaces.path(&job.sandbox.id);
    let language = job.sandbox.language.clone();
    let tools = engine.config.toolbox.clone();
    let replanned =
        tokio::task::spawn_blocking(move || petri_deps::plan(&language, &workspace, &tools)).await;
    replanned.ok()?.ok()?.map(|plan| plan.fingerprint)
}

/// The CycloneDX document of what is installed now: `(id, JSON)`, the id being its serial
/// number (derived from the content, so identical installs share one document).
async fn bill_of_materials(engine: &Engine, job: &ExecJob) -> Option<(String, String)> {
    let workspace = engine.workspaces.path(&job.sandbox.id);
    let language = job.sandbox.language.clone();
    let document = tokio::task::spawn_blocking(move || {
        petri_deps::cyclonedx(&petri_deps::installed_components(&language, &workspace))
    })
    .await
    .ok()?;
    let id = document["serialNumber"]
        .as_str()?
        .trim_start_matches("urn:uuid:")
        .to_string();
    Some((id, document.to_string()))
}

/// The line that says what went wrong, for the build tools whose last line does not (Maven
/// ends with links to its wiki, Gradle with advice about `--stacktrace`).
fn headline(output: &str) -> Option<&str> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    if let Some(maven) = lines
        .iter()
        .find_map(|l| l.strip_prefix("[ERROR] Failed to execute goal "))
    {
        return Some(maven.trim_end_matches("-> [Help 1]").trim());
    }
    let gradle = lines.iter().position(|l| *l == "* What went wrong:")?;
    lines[gradle + 1..].iter().copied().find(|l| !l.is_empty())
}

#[cfg(test)]
mod headline_tests {
    use super::headline;

    #[test]
    fn maven_and_gradle_failures_are_named_not_their_boilerplate() {
        let maven = "[INFO] BUILD FAILURE\n[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.1:compile (default-compile) on project demo: Compilation failure -> [Help 1]\n[ERROR] \n[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException\n";
        assert_eq!(
            headline(maven),
            Some(
                "org.apache.maven.plugins:maven-compiler-plugin:3.1:compile (default-compile) on project demo: Compilation failure"
            )
        );
        let gradle = "FAILURE: Build failed with an exception.\n\n* What went wrong:\nCould not resolve all files for configuration ':compileClasspath'.\n\n* Try:\nRun with --stacktrace\n";
        assert_eq!(
            headline(gradle),
            Some("Could not resolve all files for configuration ':compileClasspath'.")
        );
        assert_eq!(
            headline("ERROR: No matching distribution found for nope\n"),
            None
        );
    }
}
