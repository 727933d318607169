//! Every language a sandbox can be created for really runs inside the sandbox, from the
//! host's toolchains mounted read-only.

use serde_json::json;

use crate::helpers::*;

async fn hello(language: &str, file: &str, source: &str, command: &str, expected: &str) {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"language": language, "memory_mb": 2048, "cpus": 2.0, "pids": 512}))
        .await;
    assert_eq!(
        server.upload(&id, file, source.as_bytes().to_vec()).await.0,
        201
    );
    let done = server
        .exec_body(&id, json!({"command": command, "timeout": 300}))
        .await
        .done();
    assert_eq!(done["exit_code"], 0, "{language}: {done}");
    assert_eq!(done["output"], expected, "{language}: {done}");
}

#[tokio::test]
async fn python_runs() {
    hello(
        "python",
        "main.py",
        "print('hello python')\n",
        "python main.py",
        "hello python\n",
    )
    .await;
}

#[tokio::test]
async fn node_runs() {
    hello(
        "node",
        "main.js",
        "console.log('hello node')\n",
        "node main.js",
        "hello node\n",
    )
    .await;
}

#[tokio::test]
async fn go_runs() {
    let source = "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello go\") }\n";
    hello("go", "main.go", source, "go run main.go", "hello go\n").await;
}

#[tokio::test]
async fn java_runs() {
    let source = "public class Main { public static void main(String[] a) { System.out.println(\"hello java\"); } }\n";
    hello(
        "java",
        "Main.java",
        source,
        "javac Main.java && java Main",
        "hello java\n",
    )
    .await;
}
