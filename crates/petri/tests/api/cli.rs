//! The `petri` client subcommands against a live server: exit codes, streaming, files,
//! runs, and project folders kept in sync (changes and deletions) by `watch` / `exec`.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::*;

fn petri(server: &TestServer, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env("PETRI_URL", server.url(""))
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn sandboxes_commands_files_and_runs_from_the_command_line() {
    let server = TestServer::start().await;
    let here = tempfile::tempdir().unwrap();
    let cwd = here.path();
    let created = petri(&server, cwd, &["create", "--agent", "cli-test"]);
    assert!(created.status.success(), "{created:?}");
    let id = stdout(&created).trim().to_string();
    assert!(id.starts_with("sb_"), "{id}");

    // Output streams to stdout, the command's exit code becomes ours, its error goes to stderr.
    let ran = petri(
        &server,
        cwd,
        &["exec", "-s", &id, "--", "echo one; echo two; exit 3"],
    );
    assert_eq!(ran.status.code(), Some(3), "{ran:?}");
    assert_eq!(stdout(&ran), "one\ntwo\n");
    let ok = petri(
        &server,
        cwd,
        &[
            "exec",
            "--sandbox",
            &id,
            "printf",
            "'%s\\n'",
            "joined words",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    // Several words are one `sh -c` command line, as with ssh.
    assert_eq!(stdout(&ok), "joined\nwords\n");

    // A directory goes up zipped, without what .gitignore excludes.
    let folder = cwd.join("folder");
    std::fs::create_dir_all(folder.join("src")).unwrap();
    std::fs::write(folder.join("src/app.py"), "print('app')\n").unwrap();
    std::fs::write(folder.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(folder.join("debug.log"), "noise\n").unwrap();
    let uploaded = petri(&server, cwd, &["upload", &id, folder.to_str().unwrap()]);
    assert!(uploaded.status.success(), "{uploaded:?}");
    std::fs::write(cwd.join("single.txt"), "single\n").unwrap();
    let single = petri(
        &server,
        cwd,
        &["upload", &id, "single.txt", "--as", "renamed.txt"],
    );
    assert!(single.status.success(), "{single:?}");
    let listed = petri(
        &server,
        cwd,
        &["exec", "-s", &id, "--", "ls; python3 src/app.py"],
    );
    assert_eq!(stdout(&listed), "renamed.txt\nsrc\napp\n", "{listed:?}");
    let downloaded = petri(&server, cwd, &["download", &id, "src/app.py"]);
    assert_eq!(stdout(&downloaded), "print('app')\n");
    let saved = petri(
        &server,
        cwd,
        &["download", &id, "renamed.txt", "-o", "copy.txt"],
    );
    assert!(saved.status.success());
    assert_eq!(
        std::fs::read_to_string(cwd.join("copy.txt")).unwrap(),
        "single\n"
    );

    let runs = stdout(&petri(&server, cwd, &["runs", &id]));
    assert!(
        runs.contains("echo one; echo two; exit 3") && runs.contains("failed"),
        "{runs}"
    );
    assert!(stdout(&petri(&server, cwd, &["ls"])).contains(&id));
    let metrics: serde_json::Value =
        serde_json::from_str(&stdout(&petri(&server, cwd, &["metrics"]))).unwrap();
    assert_eq!(metrics["runs_total"], 3, "{metrics}");
    assert_eq!(metrics["by_agent"]["cli-test"]["runs"], 3, "{metrics}");
    assert!(petri(&server, cwd, &["rm", &id]).status.success());

    // Errors name what failed, with a non-zero exit.
    let gone = petri(&server, cwd, &["download", &id, "src/app.py"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("404"),
        "{gone:?}"
    );
    let nowhere = Command::new(bin())
        .args(["ls", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("cannot reach the server"));
}

#[tokio::test]
async fn a_watched_folder_stays_in_sync_with_its_sandbox() {
    let server = TestServer::start().await;
    let here = tempfile::tempdir().unwrap();
    let project = here.path();
    std::fs::create_dir_all(project.join("pkg")).unwrap();
    std::fs::write(project.join("pkg/__init__.py"), "VALUE = 1\n").unwrap();
    std::fs::write(project.join("old.py"), "print('old')\n").unwrap();
    let watched = petri(&server, project, &["watch"]);
    assert!(watched.status.success(), "{watched:?}");
    let id = stdout(&watched).trim().to_string();
    assert!(project.join(".petri-sandbox").is_file());

    // From a subdirectory, after editing, adding and deleting files.
    std::fs::write(project.join("pkg/__init__.py"), "VALUE = 2\n").unwrap();
    std::fs::remove_file(project.join("old.py")).unwrap();
    std::fs::write(
        project.join("new.py"),
        "from pkg import VALUE\nprint(VALUE)\n",
    )
    .unwrap();
    let ran = petri(
        &server,
        &project.join("pkg"),
        &["exec", "--", "ls; python3 new.py"],
    );
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    assert_eq!(
        stdout(&ran),
        "new.py\npkg\n2\n",
        "old.py is gone, the edit arrived"
    );

    // A sandbox deleted behind the folder's back is recreated with the whole folder.
    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    let again = petri(&server, project, &["exec", "--", "python3 new.py"]);
    assert_eq!(stdout(&again), "2\n", "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("is gone"));

    let unwatched = petri(&server, project, &["unwatch"]);
    assert!(unwatched.status.success(), "{unwatched:?}");
    assert!(!project.join(".petri-sandbox").exists());
    let outside = petri(&server, project, &["exec", "--", "true"]);
    assert_eq!(outside.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("not in a watched folder"));
}

#[tokio::test]
async fn background_processes_from_the_command_line() {
    let server = TestServer::start().await;
    let here = tempfile::tempdir().unwrap();
    let cwd = here.path();
    let id = stdout(&petri(&server, cwd, &["create"])).trim().to_string();
    let started = petri(
        &server,
        cwd,
        &[
            "exec",
            "-s",
            &id,
            "--background",
            "--",
            "trap 'echo stopping; exit 5' TERM; echo up; while :; do sleep 0.1; done",
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let process = stdout(&started).trim().to_string();
    assert!(process.starts_with("run_"), "{process}");
    let listed = stdout(&petri(&server, cwd, &["ps", &id]));
    assert!(
        listed.contains(&process) && listed.contains("running"),
        "{listed}"
    );
    // The command's own shell traps TERM (once it has said "up"): it gets the signal too.
    assert!(
        eventually(std::time::Duration::from_secs(10), async || {
            let (_, view) = server
                .get_json(&format!("/v1/sandboxes/{id}/processes/{process}"))
                .await;
            view["output_bytes"].as_u64().unwrap_or(0) > 0
        })
        .await
    );
    let signalled = petri(&server, cwd, &["kill", &id, &process, "--signal", "TERM"]);
    assert!(signalled.status.success(), "{signalled:?}");
    let logs = petri(&server, cwd, &["logs", &id, &process]);
    assert_eq!(logs.status.code(), Some(5), "{logs:?}");
    // (The shell also reports its `sleep` child terminated by the same signal.)
    let printed = stdout(&logs);
    assert!(
        printed.starts_with("up\n") && printed.ends_with("stopping\n"),
        "{printed}"
    );

    let sleeper = stdout(&petri(
        &server,
        cwd,
        &["exec", "-s", &id, "-b", "--", "sleep 600"],
    ))
    .trim()
    .to_string();
    let killed = petri(&server, cwd, &["kill", &id, &sleeper]);
    assert!(stdout(&killed).contains("killed"), "{killed:?}");
}
