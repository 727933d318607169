//! Dependencies install themselves, once, from the registries only, and never pollute the
//! program's output. These reach the real PyPI (through the server's egress proxy).

use serde_json::json;

use crate::helpers::*;

/// The egress log of the run a `done` event describes.
pub(crate) async fn egress_of(server: &TestServer, done: &serde_json::Value) -> serde_json::Value {
    let run_id = done["run_id"].as_str().unwrap();
    let (status, egress) = server.get_json(&format!("/v1/runs/{run_id}/egress")).await;
    assert_eq!(status, 200, "{egress}");
    egress
}

fn installs(result: &ExecResult) -> Vec<String> {
    result
        .events
        .iter()
        .filter(|e| e.name == "install")
        .map(|e| e.data.clone())
        .collect()
}

#[tokio::test]
async fn requirements_install_once_with_clean_output() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(&id, "requirements.txt", b"six==1.16.0\n".to_vec())
        .await;
    server
        .upload(
            &id,
            "app.py",
            b"import six\nprint(six.__version__)\n".to_vec(),
        )
        .await;
    let first = server.exec(&id, "python app.py").await;
    let done = first.done();
    assert_eq!(done["exit_code"], 0, "{}", first.raw);
    // The program's events carry only its own output; installer lines have their own type.
    assert_eq!(first.lines(), ["1.16.0"]);
    assert_eq!(done["output"], "1.16.0\n");
    let progress = installs(&first);
    assert!(
        progress[0].starts_with("installing dependencies from requirements.txt: six"),
        "{progress:?}"
    );
    assert!(
        progress.iter().any(|l| l.contains("six==1.16.0")),
        "{progress:?}"
    );
    assert_eq!(done["install"]["installed"], true);
    assert_eq!(done["install"]["source"], "requirements.txt");

    // Unchanged manifest: nothing is installed again, and compound commands see the packages.
    let second = server
        .exec(&id, "cd /tmp && python -c 'import six; print(six.PY3)'")
        .await;
    assert!(installs(&second).is_empty(), "{}", second.raw);
    let done = second.done();
    assert_eq!(done["output"], "True\n");
    assert_eq!(done["install"]["installed"], false);

    // Each run records what it ran with; an unchanged install shares the same document.
    let sbom =
        |run: &serde_json::Value| format!("/v1/runs/{}/sbom", run["run_id"].as_str().unwrap());
    let response = server.get(&sbom(&first.done())).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.cyclonedx+json"
    );
    let first_bom: serde_json::Value = response.json().await.unwrap();
    assert_eq!(first_bom["bomFormat"], "CycloneDX");
    assert_eq!(first_bom["specVersion"], "1.5");
    let six = &first_bom["components"][0];
    assert_eq!(
        (six["name"].clone(), six["version"].clone()),
        (json!("six"), json!("1.16.0"))
    );
    assert_eq!(six["purl"], "pkg:pypi/six@1.16.0");
    assert_eq!(six["licenses"][0]["expression"], "MIT");
    let (_, second_bom) = server.get_json(&sbom(&done)).await;
    assert_eq!(second_bom["serialNumber"], first_bom["serialNumber"]);

    // A changed manifest installs again.
    server
        .upload(&id, "requirements.txt", b"six==1.17.0\n".to_vec())
        .await;
    let third = server.exec(&id, "python app.py").await;
    assert_eq!(third.done()["output"], "1.17.0\n", "{}", third.raw);
}

#[tokio::test]
async fn imports_are_scanned_when_there_is_no_manifest() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(
            &id,
            "main.py",
            b"import os\nimport six\nfrom helpers import x\nprint(six.__name__, x)\n".to_vec(),
        )
        .await;
    server.upload(&id, "helpers.py", b"x = 1\n".to_vec()).await;
    let result = server.exec(&id, "python main.py").await;
    let done = result.done();
    assert_eq!(done["output"], "six 1\n", "{}", result.raw);
    assert_eq!(done["install"]["source"], "imports");
    assert_eq!(done["install"]["packages"], json!(["six"]));
}

#[tokio::test]
async fn unlisted_imports_are_reported_and_installed() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(&id, "requirements.txt", b"six\n".to_vec())
        .await;
    server
        .upload(
            &id,
            "app.py",
            b"import six\nimport yaml\nprint(yaml.safe_load('a: 1'))\n".to_vec(),
        )
        .await;
    let result = server.exec(&id, "python app.py").await;
    let done = result.done();
    assert_eq!(done["output"], "{'a': 1}\n", "{}", result.raw);
    assert_eq!(done["install"]["missing_imports"], json!(["PyYAML"]));
    assert!(
        installs(&result)
            .iter()
            .any(|l| l.contains("requirements.txt does not list PyYAML")),
        "{}",
        result.raw
    );
}

#[tokio::test]
async fn a_failed_install_names_the_package_and_the_command_does_not_run() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(
            &id,
            "requirements.txt",
            b"petri-no-such-package-0f9c==1.0\n".to_vec(),
        )
        .await;
    let result = server.exec(&id, "echo should-not-run").await;
    let done = result.done();
    assert_eq!(done["status"], "failed");
    assert_ne!(done["exit_code"], 0);
    let error = done["error"].as_str().unwrap();
    assert!(error.starts_with("dependency install failed"), "{error}");
    assert!(
        result.raw.contains("petri-no-such-package-0f9c"),
        "{}",
        result.raw
    );
    assert!(
        result.lines().is_empty(),
        "the command must not run: {}",
        result.raw
    );
    let (_, run) = server
        .get_json(&format!("/v1/runs/{}", done["run_id"].as_str().unwrap()))
        .await;
    assert_eq!(run["status"], "failed");
    assert_eq!(run["error"], done["error"]);
}

#[tokio::test]
async fn installs_are_logged_and_user_code_still_has_no_network() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    server
        .upload(&id, "requirements.txt", b"six\n".to_vec())
        .await;
    let probe = "import urllib.request\ntry:\n    urllib.request.urlopen('https://pypi.org/simple/six/', timeout=5)\n    print('reached')\nexcept Exception as e:\n    print('blocked', type(e).__name__)\n";
    server
        .upload(&id, "probe.py", probe.as_bytes().to_vec())
        .await;
    let result = server
        .exec(&id, "python probe.py; env | grep -ci proxy || true")
        .await;
    let done = result.done();
    let output = done["output"].as_str().unwrap();
    assert!(output.starts_with("blocked"), "{output}");
    assert!(
        output.ends_with("0\n"),
        "no proxy variables for user code: {output}"
    );
    let egress = egress_of(&server, &done).await;
    let targets: Vec<_> = egress
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["allowed"] == true)
        .map(|e| e["target"].as_str().unwrap().to_string())
        .collect();
    // Python installs go through the server's PyPI mirror on the proxy listener.
    assert!(
        targets.iter().any(|t| t == "mirror GET /pypi/simple/six/"),
        "{egress}"
    );
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["installs"]["available"], true);
}

#[tokio::test]
async fn pip_is_the_fallback_installer() {
    let server = TestServer::start_with(&[("PETRI_UV", "none")]).await;
    let (_, health) = server.get_json("/health").await;
    assert_eq!(health["installs"]["python_installer"], "pip");
    let id = server.sandbox().await;
    server
        .upload(&id, "requirements.txt", b"six==1.16.0\n".to_vec())
        .await;
    let result = server
        .exec(&id, "python -c 'import six; print(six.__version__)'")
        .await;
    assert_eq!(result.done()["output"], "1.16.0\n", "{}", result.raw);
}

#[tokio::test]
async fn installs_cannot_reach_hosts_off_the_allowlist() {
    let server = TestServer::start().await;
    let id = server.sandbox().await;
    let requirements = b"six @ https://example.com/six-1.16.0-py2.py3-none-any.whl\n".to_vec();
    server.upload(&id, "requirements.txt", requirements).await;
    let result = server.exec(&id, "echo ran").await;
    let done = result.done();
    assert_eq!(done["status"], "failed", "{}", result.raw);
    assert!(
        done["error"]
            .as_str()
            .unwrap()
            .starts_with("dependency install failed")
    );
    let egress = egress_of(&server, &done).await;
    let denied: Vec<_> = egress
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["allowed"] == false)
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(denied.first().copied(), Some("example.com:443"), "{egress}");
}

#[tokio::test]
async fn node_packages_install_once_from_npm() {
    let server = TestServer::start().await;
    let id = server.create(json!({"language": "node"})).await;
    let manifest =
        br#"{"name": "demo", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}}"#;
    server.upload(&id, "package.json", manifest.to_vec()).await;
    let script =
        b"const isNumber = require('is-number');\nconsole.log(isNumber(5), isNumber('x'));\n";
    server.upload(&id, "index.js", script.to_vec()).await;
    let first = server.exec(&id, "node index.js").await;
    let done = first.done();
    assert_eq!(done["output"], "true false\n", "{}", first.raw);
    assert_eq!(done["install"]["installed"], true);
    assert!(
        installs(&first)
            .iter()
            .any(|l| l.contains("/npm/is-number")),
        "{}",
        first.raw
    );
    // npm wrote package-lock.json; that is not a change that needs another install.
    let second = server.exec(&id, "cd / && node /sandbox/index.js").await;
    assert!(installs(&second).is_empty(), "{}", second.raw);
    assert_eq!(second.done()["install"]["installed"], false);
    let egress = egress_of(&server, &done).await;
    // npm goes through the server's mirror; a second sandbox gets the tarball from its cache.
    assert!(
        egress.to_string().contains("mirror GET /npm/is-number"),
        "{egress}"
    );
    let other = server.create(json!({"language": "node"})).await;
    server
        .upload(&other, "package.json", manifest.to_vec())
        .await;
    server.upload(&other, "index.js", script.to_vec()).await;
    let again = server.exec(&other, "node index.js").await.done();
    assert_eq!(again["output"], "true false\n");
    let egress = egress_of(&server, &again).await;
    assert!(egress.to_string().contains("(cache hit)"), "{egress}");
    let run_id = done["run_id"].as_str().unwrap();
    let (_, bom) = server.get_json(&format!("/v1/runs/{run_id}/sbom")).await;
    let component = &bom["components"][0];
    assert_eq!(component["purl"], "pkg:npm/is-number@7.0.0", "{bom}");
    assert_eq!(component["hashes"][0]["alg"], "SHA-512", "{bom}");
    assert_eq!(component["licenses"][0]["expression"], "MIT");
    assert!(
        component["externalReferences"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://registry.npmjs.org/")
    );
    // A run without dependencies has no bill of materials.
    let plain = server.create(json!({})).await;
    let run = server.exec(&plain, "true").await.done();
    let (status, body) = server
        .get_json(&format!(
            "/v1/runs/{}/sbom",
            run["run_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (404, json!("sbom_not_found"))
    );
}

#[tokio::test]
async fn go_modules_download_once_and_caches_persist() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"language": "go", "memory_mb": 2048, "cpus": 2.0, "pids": 512}))
        .await;
    let source = "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/uuid\"\n)\n\nfunc main() { fmt.Println(len(uuid.NewString())) }\n";
    server
        .upload(&id, "main.go", source.as_bytes().to_vec())
        .await;
    let body = json!({"command": "go run .", "timeout": 600});
    let first = server.exec_body(&id, body.clone()).await;
    let done = first.done();
    assert_eq!(done["output"], "36\n", "{}", first.raw);
    assert!(
        installs(&first)
            .iter()
            .any(|l| l.contains("github.com/google/uuid")),
        "{}",
        first.raw
    );
    // go.mod and go.sum now exist; the module and build caches stayed in the sandbox.
    let second = server.exec_body(&id, body).await;
    let again = second.done();
    assert_eq!(again["output"], "36\n");
    assert_eq!(again["install"]["installed"], false);
    assert!(again["duration_ms"].as_u64().unwrap() < done["duration_ms"].as_u64().unwrap());
    let (_, bom) = server
        .get_json(&format!(
            "/v1/runs/{}/sbom",
            done["run_id"].as_str().unwrap()
        ))
        .await;
    let egress = egress_of(&server, &done).await;
    assert!(
        egress
            .to_string()
            .contains("mirror GET /go/github.com/google/uuid/@v/v1.6.0.zip"),
        "modules come through the server's mirror: {egress}"
    );
    assert_eq!(
        bom["components"][0]["purl"], "pkg:golang/github.com/google/uuid@v1.6.0",
        "{bom}"
    );
    // Read from the LICENSE file the module ships.
    assert_eq!(
        bom["components"][0]["licenses"][0]["expression"], "BSD-3-Clause",
        "{bom}"
    );
}

#[tokio::test]
async fn a_second_sandbox_installs_from_the_shared_cache_that_no_sandbox_can_poison() {
    let server = TestServer::start().await;
    let first = server.sandbox().await;
    server
        .upload(&first, "requirements.txt", b"six==1.16.0\n".to_vec())
        .await;
    let done = server.exec(&first, "python -c 'import six'").await.done();
    assert_eq!(done["exit_code"], 0, "{done}");
    // The first sandbox now tampers with everything it can reach: its installed package, its
    // own installer cache, and any wheel it can find.
    let tamper = "echo 'raise SystemExit(\"poisoned\")' >> /sandbox/.petri/python/six.py; \
                  find / -xdev -name '*.whl' 2>/dev/null | while read f; do echo x > \"$f\" 2>/dev/null; done; \
                  find /sandbox/.petri/cache -type f 2>/dev/null | while read f; do echo x > \"$f\"; done; \
                  python -c 'import six' 2>&1 | tail -1";
    let tampered = server.exec(&first, tamper).await.done();
    // Its own copy is broken now (the installer cache and the package share inodes).
    let broken = tampered["output"].as_str().unwrap();
    assert!(
        broken.contains("poisoned") || broken.contains("Error"),
        "{tampered}"
    );

    let second = server.sandbox().await;
    server
        .upload(&second, "requirements.txt", b"six==1.16.0\n".to_vec())
        .await;
    let result = server
        .exec(&second, "python -c 'import six; print(six.__version__)'")
        .await;
    let done = result.done();
    assert_eq!(done["output"], "1.16.0\n", "{}", result.raw);
    let egress = egress_of(&server, &done).await;
    let hits = egress
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["detail"]
                .as_str()
                .is_some_and(|d| d.ends_with("(cache hit)"))
        })
        .count();
    assert!(hits >= 1, "the second install downloads nothing: {egress}");
}
