//! `longrun export` and `longrun import` on a data directory: the demo's run out as one JSON
//! document, into an empty directory with the same ids, and refused a second time.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn longrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(args)
        .output()
        .unwrap()
}

fn export(dir: &Path, id: &str) -> Value {
    let out = longrun(&["export", id, "--data-dir", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_run_exported_from_one_data_dir_imports_into_another_exactly_and_only_once() {
    // Arrange: the demo's run, ended, in one data directory.
    let from = tempfile::tempdir().unwrap();
    let to = tempfile::tempdir().unwrap();
    let demo = longrun(&["demo", "--data-dir", from.path().to_str().unwrap()]);
    assert!(
        demo.status.success(),
        "{}",
        String::from_utf8_lossy(&demo.stderr)
    );
    let text = String::from_utf8_lossy(&demo.stdout).to_string();
    let id = text
        .split_whitespace()
        .find(|w| w.starts_with("run_"))
        .unwrap()
        .to_string();
    let file = from.path().join("run.json");
    let written = longrun(&[
        "export",
        &id,
        "--data-dir",
        from.path().to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(written.status.success());

    // Act
    let to_dir = to.path().to_str().unwrap();
    let first = longrun(&["import", file.to_str().unwrap(), "--data-dir", to_dir]);
    let second = longrun(&["import", file.to_str().unwrap(), "--data-dir", to_dir]);

    // Assert
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let original = export(from.path(), &id);
    assert_eq!(original["format"], "longrun.run.v1");
    assert!(!original["iterations"].as_array().unwrap().is_empty());
    assert!(!original["docs"].as_array().unwrap().is_empty());
    assert_eq!(export(to.path(), &id), original);
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("already exists"));
}
