//! Artifact services: the in-memory one and the file one (adk-python's layout on disk).

use serde_json::{Map, Value, json};
use sinew_adk::{ArtifactService, FileArtifactService, InMemoryArtifactService, Part};

fn meta(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Versions, metadata, scopes, listing and deletion, the same for every service.
async fn suite(s: &dyn ArtifactService) {
    assert_eq!(s.save_artifact("app", "u", "s1", "notes.txt", Part::text("one")).await.unwrap(), 0);
    let png = Part::inline_data("image/png", vec![0x89, b'P', b'N', b'G']);
    let v = s.save_artifact_with_metadata("app", "u", "s1", "notes.txt", png.clone(), meta(json!({"by": "test"})));
    assert_eq!(v.await.unwrap(), 1);
    assert_eq!(s.load_artifact("app", "u", "s1", "notes.txt", None).await.unwrap(), Some(png.clone()));
    assert_eq!(s.load_artifact("app", "u", "s1", "notes.txt", Some(0)).await.unwrap(), Some(Part::text("one")));
    assert_eq!(s.load_artifact("app", "u", "s1", "notes.txt", Some(7)).await.unwrap(), None);
    assert_eq!(s.list_versions("app", "u", "s1", "notes.txt").await.unwrap(), [0, 1]);

    let latest = s.artifact_version("app", "u", "s1", "notes.txt", None).await.unwrap().unwrap();
    assert_eq!((latest.version, latest.mime_type.as_deref()), (1, Some("image/png")));
    assert_eq!(latest.custom_metadata, meta(json!({"by": "test"})));
    assert!(latest.create_time > 0.0);
    let all = s.list_artifact_versions("app", "u", "s1", "notes.txt").await.unwrap();
    assert_eq!(all.iter().map(|v| v.version).collect::<Vec<_>>(), [0, 1]);
    assert!(all[0].mime_type.is_none(), "a text version has no MIME type");
    let uri = &all[0].canonical_uri;
    assert!(uri.ends_with("/versions/0") || uri.ends_with("/versions/0/notes.txt"), "{uri}");

    // Nested names, and `user:` files that every session of the user sees.
    s.save_artifact("app", "u", "s1", "docs/plan.md", Part::text("plan")).await.unwrap();
    s.save_artifact("app", "u", "s1", "user:profile.txt", Part::text("me")).await.unwrap();
    assert_eq!(
        s.list_artifact_keys("app", "u", "s1").await.unwrap(),
        ["docs/plan.md", "notes.txt", "user:profile.txt"]
    );
    assert_eq!(s.list_artifact_keys("app", "u", "s2").await.unwrap(), ["user:profile.txt"]);
    assert_eq!(s.load_artifact("app", "u", "s2", "user:profile.txt", None).await.unwrap(), Some(Part::text("me")));
    assert!(s.list_artifact_keys("app", "v", "s1").await.unwrap().is_empty(), "another user sees none");

    s.delete_artifact("app", "u", "s1", "notes.txt").await.unwrap();
    assert_eq!(s.load_artifact("app", "u", "s1", "notes.txt", None).await.unwrap(), None);
    assert!(s.list_versions("app", "u", "s1", "notes.txt").await.unwrap().is_empty());
    assert_eq!(s.list_artifact_keys("app", "u", "s1").await.unwrap(), ["docs/plan.md", "user:profile.txt"]);
}

#[tokio::test]
async fn the_in_memory_service() {
    suite(&InMemoryArtifactService::new()).await;
    let s = InMemoryArtifactService::new();
    s.save_artifact("app", "u", "s1", "a.txt", Part::text("x")).await.unwrap();
    let v = s.artifact_version("app", "u", "s1", "a.txt", None).await.unwrap().unwrap();
    assert_eq!(v.canonical_uri, "memory://apps/app/users/u/sessions/s1/artifacts/a.txt/versions/0");
}

#[tokio::test]
async fn the_file_service_keeps_adk_pythons_layout() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileArtifactService::new(dir.path()).unwrap();
    suite(&s).await;
    s.save_artifact("app", "u", "s1", "report.txt", Part::text("hello")).await.unwrap();
    let root = s.root().to_owned();
    let version = root.join("apps/app/users/u/sessions/s1/artifacts/report.txt/versions/0");
    assert_eq!(std::fs::read_to_string(version.join("report.txt")).unwrap(), "hello");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(version.join("metadata.json")).unwrap()).unwrap();
    assert_eq!((&doc["fileName"], &doc["version"]), (&json!("report.txt"), &json!(0)));
    assert!(doc["canonicalUri"].as_str().unwrap().starts_with("file:///"), "{doc}");
    assert!(root.join("apps/app/users/u/artifacts/profile.txt/versions/0/profile.txt").exists(), "user: files");
    // The URI is percent-encoded as Python's `Path.as_uri()` writes it.
    s.save_artifact("app", "u", "s1", "my notes ü#?%.txt", Part::text("x")).await.unwrap();
    let odd = s.artifact_version("app", "u", "s1", "my notes ü#?%.txt", None).await.unwrap().unwrap();
    assert!(
        odd.canonical_uri
            .ends_with("/artifacts/my%20notes%20%C3%BC%23%3F%25.txt/versions/0/my%20notes%20%C3%BC%23%3F%25.txt"),
        "{}",
        odd.canonical_uri
    );
    // Another service over the same directory reads it all.
    let again = FileArtifactService::new(dir.path()).unwrap();
    assert_eq!(again.load_artifact("app", "u", "s1", "report.txt", None).await.unwrap(), Some(Part::text("hello")));
}

#[tokio::test]
async fn the_file_service_refuses_names_that_leave_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileArtifactService::new(dir.path().join("root")).unwrap();
    for name in
        ["../escape.txt", "/etc/passwd", "a/../../b", "versions/x", "a/Versions/b", "metadata.json", "user:../x"]
    {
        let saved = s.save_artifact("app", "u", "s1", name, Part::text("x")).await;
        assert!(saved.is_err(), "{name} was saved");
    }
    for (app, user, session) in [("..", "u", "s"), ("app", "a/b", "s"), ("app", "u", "..")] {
        assert!(s.save_artifact(app, user, session, "f.txt", Part::text("x")).await.is_err(), "{app} {user} {session}");
    }
    let root = dir.path().join("root");
    let mut stack = vec![dir.path().to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                assert!(path.starts_with(&root), "{} was written outside the root", path.display());
                assert_ne!(entry.file_name(), "escape.txt", "{}", path.display());
            }
        }
    }
    let empty = Part::default();
    assert!(s.save_artifact("app", "u", "s1", "empty", empty).await.is_err(), "a part with neither text nor data");
    assert!(s.list_versions("app", "u", "s1", "empty").await.unwrap().is_empty(), "nothing half-saved");
}

/// Savers racing on one name each get a version of their own, and every version is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_take_distinct_versions() {
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(FileArtifactService::new(dir.path()).unwrap());
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.save_artifact("app", "u", "s1", "race.txt", Part::text(format!("v{i}"))).await.unwrap()
            })
        })
        .collect();
    let mut versions = Vec::new();
    for task in tasks {
        versions.push(task.await.unwrap());
    }
    versions.sort_unstable();
    versions.dedup();
    assert_eq!(versions.len(), 16, "{versions:?}");
    assert_eq!(s.list_versions("app", "u", "s1", "race.txt").await.unwrap().len(), 16);
    for v in versions {
        assert!(s.load_artifact("app", "u", "s1", "race.txt", Some(v)).await.unwrap().is_some());
    }
}

/// adk-python's own FileArtifactService reads what sinew wrote (versions, metadata, content,
/// canonical URIs), and sinew reads what it wrote.
#[tokio::test]
#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk 2.13.0")]
async fn adk_python_and_sinew_share_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileArtifactService::new(dir.path()).unwrap();
    s.save_artifact("interop", "u1", "s1", "notes ü.txt", Part::text("first")).await.unwrap();
    let png = Part::inline_data("image/png", vec![0x89, b'P', b'N', b'G']);
    s.save_artifact_with_metadata("interop", "u1", "s1", "notes ü.txt", png, meta(json!({"by": "sinew"})))
        .await
        .unwrap();
    s.save_artifact("interop", "u1", "s1", "docs/plan.md", Part::text("plan")).await.unwrap();

    let python = std::env::var("SINEW_ADK_PYTHON").expect("SINEW_ADK_PYTHON names a python with google-adk 2.13.0");
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/scripts/adk_artifacts.py");
    let output = std::process::Command::new(python).arg(script).arg("read").arg(s.root()).output().unwrap();
    assert!(output.status.success(), "adk-python failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Vec<Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ours = s.list_artifact_versions("interop", "u1", "s1", "notes ü.txt").await.unwrap();
    let expected = vec![
        json!({"key": "docs/plan.md", "version": 0, "mimeType": null, "customMetadata": {},
               "canonicalUri": s.artifact_version("interop", "u1", "s1", "docs/plan.md", None).await.unwrap().unwrap().canonical_uri,
               "part": {"text": "plan"}}),
        json!({"key": "notes ü.txt", "version": 0, "mimeType": null, "customMetadata": {},
               "canonicalUri": ours[0].canonical_uri, "part": {"text": "first"}}),
        json!({"key": "notes ü.txt", "version": 1, "mimeType": "image/png", "customMetadata": {"by": "sinew"},
               "canonicalUri": ours[1].canonical_uri, "part": {"mimeType": "image/png", "data": "iVBORw=="}}),
    ];
    assert_eq!(seen, expected);

    // What adk-python wrote, sinew reads.
    assert_eq!(s.list_versions("interop", "u1", "s1", "from-python.txt").await.unwrap(), [0, 1]);
    assert_eq!(
        s.load_artifact("interop", "u1", "s1", "from-python.txt", None).await.unwrap(),
        Some(Part::text("written by adk-python"))
    );
    let latest = s.artifact_version("interop", "u1", "s1", "from-python.txt", None).await.unwrap().unwrap();
    assert_eq!(latest.custom_metadata, meta(json!({"by": "python"})));
    assert_eq!(
        s.load_artifact("interop", "u1", "other-session", "user:shared.bin", None).await.unwrap(),
        Some(Part::inline_data("image/png", b"\x89PNG\r\n".to_vec()))
    );
}
