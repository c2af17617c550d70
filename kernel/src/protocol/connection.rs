//! The connection file Jupyter starts a kernel with: read and checked before anything is
//! bound, so that every problem is one line naming the file (the caller exits non-zero).
//! Binding itself (a bad address, a port in use) is checked where the sockets are bound.

use std::path::Path;

use jupyter_protocol::ConnectionInfo;

/// The only signature scheme the messaging spec defines.
const SCHEME: &str = "hmac-sha256";

/// Reads and checks a connection file.
pub fn read(path: &Path) -> Result<ConnectionInfo, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read connection file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("invalid connection file {}: {e}", path.display()))
}

fn parse(text: &str) -> Result<ConnectionInfo, String> {
    let info: ConnectionInfo = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if !info.key.is_empty() && info.signature_scheme != SCHEME {
        return Err(format!(
            "unsupported signature scheme {:?} (expected {SCHEME:?})",
            info.signature_scheme
        ));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = r#"{"transport": "tcp", "ip": "127.0.0.1", "shell_port": 1, "iopub_port": 2,
        "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": "k", "signature_scheme": "hmac-sha256"}"#;

    #[test]
    fn tcp_and_ipc_files_are_read() {
        let info = parse(TCP).unwrap();
        assert_eq!(info.shell_url(), "tcp://127.0.0.1:1");
        let ipc = TCP
            .replace("\"tcp\"", "\"ipc\"")
            .replace("127.0.0.1", "/tmp/kernel-x");
        let info = parse(&ipc).unwrap();
        assert_eq!(info.shell_url(), "ipc:///tmp/kernel-x-1");
    }

    #[test]
    fn every_bad_file_is_an_error_naming_it() {
        let unknown = TCP.replace("\"tcp\"", "\"udp\"");
        assert!(parse(&unknown).is_err());
        let scheme = TCP.replace("hmac-sha256", "hmac-md5");
        assert!(parse(&scheme).unwrap_err().contains("hmac-md5"));
        assert!(parse("{").is_err());
        assert!(parse(r#"{"transport": "tcp"}"#).is_err());
        let missing = read(Path::new("/nonexistent/kernel.json")).unwrap_err();
        assert!(missing.contains("/nonexistent/kernel.json"), "{missing}");
    }
}
