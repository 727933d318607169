//! `petri doctor` tells the truth about the host, and its exit code says how much isolation
//! the server would give.

use std::process::Command;

use crate::helpers::bin;

fn doctor(command: &mut Command) -> (i32, String) {
    let out = command.output().expect("petri doctor runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn doctor_reports_full_isolation_as_root() {
    let (code, report) = doctor(Command::new(bin()).arg("doctor"));
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("verdict: full isolation"), "{report}");
    assert!(report.contains("cgroup-v"), "{report}");
    for check in ["landlock", "identities", "disk quota"] {
        let line = report
            .lines()
            .find(|l| l.trim_start().starts_with(check))
            .unwrap_or_else(|| panic!("no {check} line: {report}"));
        assert!(line.contains(" ok "), "{line}");
    }
}

#[test]
fn doctor_fails_loudly_without_a_sandbox_engine() {
    let (code, report) =
        doctor(Command::new(bin()).args(["doctor", "--bwrap", "/nonexistent/bwrap"]));
    assert_eq!(code, 1, "{report}");
    assert!(report.contains("sandbox           FAILED"), "{report}");
    assert!(report.contains("verdict: no sandbox can run"), "{report}");
}

#[test]
fn doctor_says_degraded_for_an_unprivileged_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("petri");
    std::fs::copy(bin(), &binary).unwrap();
    let (code, report) = doctor(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&binary)
            .arg("doctor")
            .env("TMPDIR", "/tmp"),
    );
    assert_eq!(code, 2, "{report}");
    assert!(report.contains("limits            degraded"), "{report}");
    assert!(report.contains("identities        degraded"), "{report}");
    assert!(report.contains("disk quota        degraded"), "{report}");
}
