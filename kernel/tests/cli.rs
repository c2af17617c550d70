//! The `tensorbook` binary as a user runs it.

use std::process::Command;

fn tensorbook(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(args)
        .env_remove("TENSORBOOK_CLIENT")
        .output()
        .expect("run tensorbook")
}

#[test]
fn clients_lists_every_client_with_the_reason_for_absent_ones() {
    let out = tensorbook(&["clients"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("host") && text.contains("host:0"), "{text}");
    assert!(text.contains("binary") && text.contains("cuda"), "{text}");
    assert!(text.contains("session default: "), "{text}");
}

#[test]
fn clients_json_is_machine_readable_and_honours_the_host_device_setting() {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(["clients", "--json"])
        .env("TENSORBOOK_HOST_DEVICES", "2")
        .env("TENSORBOOK_CLIENT", "host:1")
        .output()
        .expect("run tensorbook");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let host = v["clients"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["client"] == "host"))
        .expect("a host entry")
        .clone();
    assert_eq!(host["device_count"], 2);
    assert_eq!(v["default"], "host:1");
    let cuda = v["clients"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["client"] == "cuda"))
        .expect("a cuda entry")
        .clone();
    if cuda["available"] == false {
        assert!(cuda["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
}

#[test]
fn unknown_commands_fail_with_usage() {
    let out = tensorbook(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}
