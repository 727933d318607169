use super::*;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("registry.db")).unwrap();
    (dir, store)
}

fn sandbox(id: &str, agent: Option<&str>, created_at: &str) -> NewSandbox {
    NewSandbox {
        id: id.into(),
        language: "python".into(),
        agent: agent.map(Into::into),
        created_by: "alice".into(),
        created_at: created_at.into(),
        expires_at: "2026-01-01T01:00:00.000000Z".into(),
        memory_mb: None,
        pids_max: Some(64),
        cpu_millis: None,
        disk_mb: None,
        host_uid_base: None,
    }
}

#[test]
fn host_uids_are_allocated_upwards_and_never_shared() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db")).unwrap();
    let with_base = |id: &str| NewSandbox {
        host_uid_base: Some(1_000_000_000),
        ..sandbox(id, None, "2026-01-01T00:00:00.000000Z")
    };
    store
        .insert_sandbox(&sandbox("shared", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    store.insert_sandbox(&with_base("a")).unwrap();
    store.insert_sandbox(&with_base("b")).unwrap();
    let uid = |id: &str| store.sandbox(id).unwrap().unwrap().host_uid;
    assert_eq!(uid("shared"), None);
    assert_eq!(uid("a"), Some(1_000_000_000));
    assert_eq!(uid("b"), Some(1_000_000_001));
    // Deleting keeps the row, so the uid is never handed out again.
    store
        .soft_delete_sandbox(
            "b",
            crate::SandboxStatus::Deleted,
            "2026-01-01T00:00:01.000000Z",
        )
        .unwrap();
    store.insert_sandbox(&with_base("c")).unwrap();
    assert_eq!(uid("c"), Some(1_000_000_002));
}

fn run(id: &str, sandbox_id: &str, started_at: &str) -> NewRun {
    NewRun {
        id: id.into(),
        sandbox_id: sandbox_id.into(),
        command: "python main.py".into(),
        started_at: started_at.into(),
        timeout_seconds: 30,
        background: false,
    }
}

fn outcome(status: RunStatus, exit_code: i32, duration_ms: u64, bytes: u64) -> RunOutcome {
    RunOutcome {
        status,
        completed_at: "2026-01-01T00:00:01.000000Z".into(),
        duration_ms,
        exit_code: Some(exit_code),
        error: (exit_code != 0).then(|| "boom".into()),
        output_bytes: bytes,
        output_truncated: false,
        test_summary: None,
    }
}

#[test]
fn soft_delete_writes_deleted_at_once() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    assert!(
        store
            .soft_delete_sandbox(
                "sb_a",
                SandboxStatus::Expired,
                "2026-01-01T02:00:00.000000Z"
            )
            .unwrap()
    );
    assert!(
        !store
            .soft_delete_sandbox(
                "sb_a",
                SandboxStatus::Deleted,
                "2026-01-01T03:00:00.000000Z"
            )
            .unwrap()
    );
    let record = store.sandbox("sb_a").unwrap().unwrap();
    assert_eq!(record.status, SandboxStatus::Expired);
    assert_eq!(
        record.deleted_at.as_deref(),
        Some("2026-01-01T02:00:00.000000Z")
    );
    assert!(
        store
            .expired_sandbox_ids("2030-01-01T00:00:00.000000Z")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn touch_extends_expiry_and_activates() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    store
        .touch_sandbox(
            "sb_a",
            "2026-01-01T00:30:00.000000Z",
            "2026-01-01T01:30:00.000000Z",
            false,
        )
        .unwrap();
    let record = store.sandbox("sb_a").unwrap().unwrap();
    assert_eq!(record.status, SandboxStatus::Created);
    assert_eq!(record.expires_at, "2026-01-01T01:30:00.000000Z");
    store
        .touch_sandbox(
            "sb_a",
            "2026-01-01T00:31:00.000000Z",
            "2026-01-01T01:31:00.000000Z",
            true,
        )
        .unwrap();
    assert_eq!(
        store.sandbox("sb_a").unwrap().unwrap().status,
        SandboxStatus::Active
    );
    assert_eq!(
        store
            .expired_sandbox_ids("2026-01-01T01:31:00.000000Z")
            .unwrap(),
        vec!["sb_a".to_string()]
    );
}

#[test]
fn lists_are_newest_first_and_live_excludes_deleted() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_old", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    store
        .insert_sandbox(&sandbox("sb_new", None, "2026-01-01T00:00:05.000000Z"))
        .unwrap();
    store
        .soft_delete_sandbox(
            "sb_old",
            SandboxStatus::Deleted,
            "2026-01-01T00:00:06.000000Z",
        )
        .unwrap();
    let all: Vec<_> = store
        .list_sandboxes(50, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(all, ["sb_new", "sb_old"]);
    let page: Vec<_> = store
        .list_sandboxes(1, 1)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(page, ["sb_old"]);
    let live: Vec<_> = store
        .list_live_sandboxes("2026-01-01T00:10:00.000000Z")
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(live, ["sb_new"]);
}

#[test]
fn run_lifecycle_and_retention_bookkeeping() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    store
        .insert_run(&run("run_1", "sb_a", "2026-01-01T00:00:01.000000Z"))
        .unwrap();
    store
        .insert_run(&run("run_2", "sb_a", "2026-01-01T00:00:02.000000Z"))
        .unwrap();
    assert_eq!(store.open_run_ids().unwrap().len(), 2);
    store
        .complete_run("run_1", &outcome(RunStatus::Succeeded, 0, 10, 100))
        .unwrap();
    // A second completion must not overwrite the first.
    store
        .complete_run("run_1", &outcome(RunStatus::Failed, 1, 99, 5))
        .unwrap();
    let first = store.run("run_1").unwrap().unwrap();
    assert_eq!(first.status, RunStatus::Succeeded);
    assert_eq!(first.output_bytes, 100);
    assert_eq!(store.retained_output_bytes().unwrap(), 100);
    store
        .complete_run("run_2", &outcome(RunStatus::Failed, 2, 20, 50))
        .unwrap();
    assert_eq!(
        store.oldest_retained_outputs(1).unwrap(),
        vec![("run_1".to_string(), 100)]
    );
    store.mark_output_evicted("run_1").unwrap();
    assert_eq!(store.retained_output_bytes().unwrap(), 50);
    let ids: Vec<_> = store
        .list_runs("sb_a")
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["run_2", "run_1"]);
}

#[test]
fn metrics_match_v0_11_semantics() {
    let (_dir, store) = store();
    let empty = store.metrics().unwrap();
    assert_eq!(empty.success_rate, None);
    assert_eq!(empty.avg_duration_ms, 0);
    store
        .insert_sandbox(&sandbox(
            "sb_a",
            Some("claude-code"),
            "2026-01-01T00:00:00.000000Z",
        ))
        .unwrap();
    store
        .insert_sandbox(&sandbox("sb_b", None, "2026-01-01T00:00:01.000000Z"))
        .unwrap();
    store
        .soft_delete_sandbox(
            "sb_b",
            SandboxStatus::Deleted,
            "2026-01-01T00:00:02.000000Z",
        )
        .unwrap();
    for (id, sb, status, code, ms) in [
        ("run_1", "sb_a", RunStatus::Succeeded, 0, 10),
        ("run_2", "sb_a", RunStatus::Failed, 1, 20),
        ("run_3", "sb_a", RunStatus::Succeeded, 0, 31),
        ("run_4", "sb_b", RunStatus::Failed, 3, 40),
    ] {
        store
            .insert_run(&run(id, sb, "2026-01-01T00:00:03.000000Z"))
            .unwrap();
        store
            .complete_run(id, &outcome(status, code, ms, 1))
            .unwrap();
    }
    // Still running: not counted.
    store
        .insert_run(&run("run_5", "sb_a", "2026-01-01T00:00:04.000000Z"))
        .unwrap();
    let metrics = store.metrics().unwrap();
    assert_eq!(metrics.sandboxes_active, 1);
    assert_eq!(metrics.sandboxes_total, 2);
    assert_eq!(metrics.runs_total, 4);
    assert_eq!(metrics.runs_failed, 2);
    assert_eq!(metrics.success_rate, Some(0.5));
    assert_eq!(metrics.avg_duration_ms, 25);
    assert_eq!(metrics.by_agent.len(), 1);
    let agent = &metrics.by_agent["claude-code"];
    assert_eq!(agent.runs, 3);
    assert_eq!(agent.success_rate, 0.67);
}

#[test]
fn reopening_keeps_data_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    {
        let store = Store::open(&path).unwrap();
        store
            .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert!(store.sandbox("sb_a").unwrap().is_some());
}

#[test]
fn expiry_rechecks_the_deadline() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    // Touched after the sweeper listed it: not expired.
    store
        .touch_sandbox(
            "sb_a",
            "2026-01-01T00:59:00.000000Z",
            "2026-01-01T01:59:00.000000Z",
            false,
        )
        .unwrap();
    assert!(
        !store
            .expire_sandbox("sb_a", "2026-01-01T01:00:00.000000Z")
            .unwrap()
    );
    assert!(
        store
            .expire_sandbox("sb_a", "2026-01-01T02:00:00.000000Z")
            .unwrap()
    );
    let record = store.sandbox("sb_a").unwrap().unwrap();
    assert_eq!(record.status, SandboxStatus::Expired);
    assert!(
        !store
            .expire_sandbox("sb_a", "2026-01-01T03:00:00.000000Z")
            .unwrap()
    );
}

#[test]
fn installs_and_egress_are_recorded() {
    let (_dir, store) = store();
    store
        .insert_sandbox(&sandbox("sb_a", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    assert_eq!(store.install_fingerprint("sb_a").unwrap(), None);
    let install = |fingerprint: &str, run_id: &str, sbom_id: Option<&str>| InstallRecord {
        sandbox_id: "sb_a".into(),
        fingerprint: fingerprint.into(),
        source: "requirements.txt".into(),
        installed_at: "t".into(),
        run_id: run_id.into(),
        sbom_id: sbom_id.map(Into::into),
    };
    store.record_install(&install("f1", "run_1", None)).unwrap();
    store.save_sbom("bom1", "{}", "t").unwrap();
    store.save_sbom("bom1", "{\"ignored\": true}", "t").unwrap();
    store
        .record_install(&install("f2", "run_2", Some("bom1")))
        .unwrap();
    assert_eq!(
        store.install_fingerprint("sb_a").unwrap().as_deref(),
        Some("f2")
    );
    assert_eq!(
        store.install_sbom_id("sb_a").unwrap().as_deref(),
        Some("bom1")
    );
    store.insert_run(&run("run_2", "sb_a", "t")).unwrap();
    assert_eq!(store.run_sbom("run_2").unwrap(), None);
    store.set_run_sbom("run_2", "bom1").unwrap();
    assert_eq!(
        store.run_sbom("run_2").unwrap(),
        Some(("bom1".into(), "{}".into()))
    );
    let event = EgressRecord {
        sandbox_id: "sb_a".into(),
        run_id: "run_2".into(),
        at: "t2".into(),
        target: "pypi.org:443".into(),
        allowed: true,
        detail: None,
        bytes_up: 10,
        bytes_down: 20,
    };
    store.record_egress(&event).unwrap();
    assert_eq!(store.egress_of_run("run_2").unwrap(), vec![event]);
}

#[test]
fn background_runs_are_listed_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db")).unwrap();
    store
        .insert_sandbox(&sandbox("s1", None, "2026-01-01T00:00:00.000000Z"))
        .unwrap();
    store
        .insert_run(&run("r1", "s1", "2026-01-01T00:00:01Z"))
        .unwrap();
    store
        .insert_run(&NewRun {
            background: true,
            ..run("r2", "s1", "2026-01-01T00:00:02Z")
        })
        .unwrap();
    let background = store.list_background_runs("s1").unwrap();
    assert_eq!(background.len(), 1);
    assert_eq!(background[0].id, "r2");
    assert!(background[0].background);
    assert!(!store.run("r1").unwrap().unwrap().background);
    assert_eq!(store.list_runs("s1").unwrap().len(), 2);
}
