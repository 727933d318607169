//! The twelve v0.11 routes: shapes, status codes and error bodies.

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn startup_line_and_health_say_where_and_how() {
    let server = TestServer::start().await;
    assert!(
        server.banner.contains("isolation: bwrap"),
        "{}",
        server.banner
    );
    assert!(
        server.banner.contains("limits: cgroup-"),
        "{}",
        server.banner
    );
    let (status, health) = server.get_json("/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["isolation"]["backend"], "bwrap");
    assert_eq!(health["isolation"]["network"], "none (loopback only)");
    assert_eq!(health["limits"]["degraded"], false);
    assert_eq!(health["limits"]["memory_mb"], 512);
    assert_eq!(health["sandbox_ttl_seconds"], 3600);
    assert_eq!(health["log_max_bytes"], 500 << 20);
    assert_eq!(health["listen"], server.url.trim_start_matches("http://"));
}

#[tokio::test]
async fn create_get_list_active_delete() {
    let server = TestServer::start().await;
    let (status, created) = server
        .post_json(
            "/v1/sandboxes",
            json!({"language": "python", "agent": "claude-code", "created_by": "alice"}),
        )
        .await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("sb_") && id.len() == 35, "{id}");
    assert_eq!(created["language"], "python");
    assert_eq!(created["status"], "created");
    assert_eq!(created["agent"], "claude-code");
    assert_eq!(created["created_by"], "alice");
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));

    // A bodiless create works (v0.11 answered 422), with the v0.11 defaults.
    let response = server
        .client
        .post(server.url("/v1/sandboxes"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let bare: serde_json::Value = response.json().await.unwrap();
    assert_eq!(bare["language"], "python");
    assert_eq!(bare["created_by"], "unknown");
    assert_eq!(bare["agent"], serde_json::Value::Null);

    let (status, got) = server.get_json(&format!("/v1/sandboxes/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (got["id"].clone(), got["language"].clone()),
        (json!(id), json!("python"))
    );

    let (_, list) = server.get_json("/v1/sandboxes").await;
    let ids: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [bare["id"].as_str().unwrap(), &id], "newest first");
    let (_, page) = server.get_json("/v1/sandboxes?limit=1&offset=1").await;
    assert_eq!(page[0]["id"], json!(id));
    let (status, bad) = server.get_json("/v1/sandboxes?limit=abc").await;
    assert_eq!(status, 422, "{bad}");

    assert_eq!(server.delete(&format!("/v1/sandboxes/{id}")).await, 204);
    let (status, body) = server.get_json(&format!("/v1/sandboxes/{id}")).await;
    assert_eq!(
        (status, body["detail"].clone()),
        (404, json!("Sandbox not found"))
    );
    let (_, active) = server.get_json("/v1/sandboxes/active").await;
    assert_eq!(active.as_array().unwrap().len(), 1);
    let (_, list) = server.get_json("/v1/sandboxes").await;
    let deleted = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == json!(id))
        .unwrap();
    assert_eq!(deleted["status"], "deleted");
    assert!(deleted["deleted_at"].is_string());
}

#[tokio::test]
async fn unknown_language_is_422_with_the_supported_list() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post_json("/v1/sandboxes", json!({"language": "rust"}))
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["code"], "unsupported_language");
    assert_eq!(body["supported"], json!(["python", "node", "go", "java"]));
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("python, node, go, java")
    );
    for language in ["python", "node", "go", "java"] {
        assert_eq!(
            server
                .post_json("/v1/sandboxes", json!({"language": language}))
                .await
                .0,
            201
        );
    }
    let (status, _) = server
        .post_json("/v1/sandboxes", json!({"created_by": null}))
        .await;
    assert_eq!(status, 422, "created_by null is invalid, as in v0.11");
}

#[tokio::test]
async fn upload_exec_runs_metrics_round_trip() {
    let server = TestServer::start().await;
    let id = server.create(json!({"agent": "probe-agent"})).await;
    let (status, body) = server
        .upload(&id, "main.py", b"print('hi from file')\n".to_vec())
        .await;
    assert_eq!((status, body["filename"].clone()), (201, json!("main.py")));
    let zip = zip_of(&[
        ("lib/util.py", b"X = 41\n"),
        ("app.py", b"from lib.util import X\nprint(X + 1)\n"),
    ]);
    let (status, body) = server.upload_zip(&id, zip).await;
    assert_eq!((status, body["status"].clone()), (201, json!("uploaded")));

    let result = server
        .exec(
            &id,
            "python /sandbox/main.py && cd /sandbox && python app.py",
        )
        .await;
    assert_eq!(result.status, 200);
    assert_eq!(result.done()["output"], "hi from file\n42\n");

    let runs = server.runs(&id).await;
    assert_eq!(runs.len(), 1);
    for key in [
        "id",
        "started_at",
        "completed_at",
        "duration_ms",
        "exit_code",
        "error",
    ] {
        assert!(runs[0].get(key).is_some(), "run lacks {key}: {}", runs[0]);
    }
    assert!(runs[0]["id"].as_str().unwrap().starts_with("run_"));
    let (status, metrics) = server.get_json("/v1/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(metrics["runs_total"], 1);
    assert_eq!(
        metrics["by_agent"]["probe-agent"],
        json!({"runs": 1, "success_rate": 1.0})
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() {
    let server = TestServer::start().await;
    let (status, body) = server.get_json("/nope").await;
    assert_eq!((status, body["detail"].clone()), (404, json!("Not Found")));
    let response = server
        .client
        .put(server.url("/v1/sandboxes"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["detail"], "Method Not Allowed");
}

#[tokio::test]
async fn dashboard_escapes_everything_it_shows() {
    let server = TestServer::start().await;
    let payload = "<img src=x onerror=alert(1)>";
    let id = server
        .create(json!({"agent": payload, "created_by": "<script>alert(2)</script>"}))
        .await;
    let result = server
        .exec(&id, "echo '<svg onload=alert(3)>'; exit 1")
        .await;
    assert_eq!(result.done()["error"], "<svg onload=alert(3)>");
    let response = server.get("/dashboard").await;
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let html = response.text().await.unwrap();
    assert!(html.contains(&id));
    for raw in ["<img", "<script>", "<svg"] {
        assert!(!html.contains(raw), "unescaped {raw} in dashboard");
    }
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(html.contains("&lt;svg onload=alert(3)&gt;"));
}
