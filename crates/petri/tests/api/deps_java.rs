//! Java projects: Maven and Gradle builds resolve their dependencies once, through the
//! server's mirror, for the build tools and for plain `javac`/`java` alike.

use serde_json::json;

use crate::deps::egress_of;
use crate::helpers::*;

#[tokio::test]
async fn maven_dependencies_resolve_once_and_reach_javac_java_and_offline_mvn() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"language": "java", "memory_mb": 2048, "cpus": 2.0, "pids": 512}))
        .await;
    let pom = r#"<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>demo</groupId><artifactId>demo</artifactId><version>1.0</version>
<properties><maven.compiler.source>17</maven.compiler.source><maven.compiler.target>17</maven.compiler.target>
<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
<dependencies><dependency><groupId>org.apache.commons</groupId><artifactId>commons-lang3</artifactId>
<version>3.14.0</version></dependency></dependencies></project>"#;
    let main = "import org.apache.commons.lang3.StringUtils;\npublic class Main { public static void main(String[] a) { System.out.println(StringUtils.reverse(\"avaj\")); } }\n";
    let zip = zip_of(&[
        ("pom.xml", pom.as_bytes()),
        ("src/main/java/Main.java", main.as_bytes()),
    ]);
    assert_eq!(server.upload_zip(&id, zip).await.0, 201);
    let command = "javac -d /tmp src/main/java/Main.java && java -cp /tmp:$CLASSPATH Main && mvn -B -q -o compile && echo offline-build-ok";
    let first = server
        .exec_body(&id, json!({"command": command, "timeout": 900}))
        .await;
    let done = first.done();
    assert_eq!(done["exit_code"], 0, "{}", first.raw);
    let output = done["output"].as_str().unwrap();
    assert!(
        output.starts_with("java\n") && output.contains("offline-build-ok"),
        "{output}"
    );
    assert_eq!(
        done["install"]["packages"],
        json!(["org.apache.commons:commons-lang3"])
    );
    let (_, bom) = server
        .get_json(&format!(
            "/v1/runs/{}/sbom",
            done["run_id"].as_str().unwrap()
        ))
        .await;
    let component = &bom["components"][0];
    assert_eq!(
        component["purl"], "pkg:maven/org.apache.commons/commons-lang3@3.14.0",
        "{bom}"
    );
    assert_eq!(component["hashes"][0]["alg"], "SHA-1", "{bom}");
    // Declared by commons-lang3's parent POM.
    assert_eq!(
        component["licenses"][0]["expression"], "Apache-2.0",
        "{bom}"
    );
    let egress = egress_of(&server, &done).await;
    assert!(
        egress
            .to_string()
            .contains("mirror GET /maven2/org/apache/commons/commons-lang3"),
        "artifacts come through the server's mirror: {egress}"
    );
    let second = server.exec(&id, "cd target/classes && java Main").await;
    assert_eq!(second.done()["output"], "java\n", "{}", second.raw);
    assert_eq!(second.done()["install"]["installed"], false);
}

#[tokio::test]
async fn gradle_dependencies_resolve_once_and_reach_javac_java_and_offline_gradle() {
    let server = TestServer::start().await;
    let id = server
        .create(json!({"language": "java", "memory_mb": 2048, "cpus": 2.0, "pids": 512}))
        .await;
    let build = "plugins { id 'java' }\nrepositories { mavenCentral() }\ndependencies {\n    implementation 'com.google.code.gson:gson:2.10.1'\n}\n";
    let main = "import com.google.gson.Gson;\npublic class Main { public static void main(String[] a) { System.out.println(new Gson().toJson(java.util.List.of(\"gradle\"))); } }\n";
    let zip = zip_of(&[
        ("build.gradle", build.as_bytes()),
        ("settings.gradle", b"rootProject.name = 'demo'\n".as_slice()),
        ("src/main/java/Main.java", main.as_bytes()),
    ]);
    assert_eq!(server.upload_zip(&id, zip).await.0, 201);
    let command = "javac -d /tmp src/main/java/Main.java && java -cp /tmp:$CLASSPATH Main && gradle -q --offline compileJava && echo offline-build-ok";
    let first = server
        .exec_body(&id, json!({"command": command, "timeout": 900}))
        .await;
    let done = first.done();
    assert_eq!(done["exit_code"], 0, "{}", first.raw);
    let output = done["output"].as_str().unwrap();
    assert!(
        output.starts_with("[\"gradle\"]\n") && output.contains("offline-build-ok"),
        "{output}"
    );
    assert_eq!(done["install"]["source"], "build.gradle", "{done}");
    assert_eq!(
        done["install"]["packages"],
        json!(["com.google.code.gson:gson"])
    );
    let (_, bom) = server
        .get_json(&format!(
            "/v1/runs/{}/sbom",
            done["run_id"].as_str().unwrap()
        ))
        .await;
    let component = &bom["components"][0];
    assert_eq!(
        component["purl"], "pkg:maven/com.google.code.gson/gson@2.10.1",
        "{bom}"
    );
    assert_eq!(component["hashes"][0]["alg"], "SHA-1", "{bom}");
    assert_eq!(
        component["licenses"][0]["expression"], "Apache-2.0",
        "{bom}"
    );
    let egress = egress_of(&server, &done).await;
    assert!(
        egress
            .to_string()
            .contains("mirror GET /maven2/com/google/code/gson/gson/2.10.1"),
        "artifacts come through the server's mirror: {egress}"
    );
    let second = server
        .exec(&id, "cd build/classes/java/main && java Main")
        .await;
    assert_eq!(second.done()["output"], "[\"gradle\"]\n", "{}", second.raw);
    assert_eq!(second.done()["install"]["installed"], false);
}
