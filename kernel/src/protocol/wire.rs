//! The Jupyter wire protocol: multipart frames, HMAC-SHA256 signatures over the four JSON
//! dicts (buffers are not signed), constant-time verification and replay protection.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

const DELIMITER: &[u8] = b"<IDS|MSG>";
/// How many signatures are remembered to refuse replays.
const REPLAY_WINDOW: usize = 65536;
/// The protocol version this kernel speaks.
pub const PROTOCOL_VERSION: &str = "5.4";

/// Why an incoming multipart message was dropped.
#[derive(Debug, PartialEq, Eq)]
pub enum WireError {
    /// No `<IDS|MSG>` frame.
    NoDelimiter,
    /// Fewer than signature + four dicts after the delimiter.
    TooFewFrames(usize),
    /// The signature is missing, malformed or wrong.
    BadSignature,
    /// The same signature was already received: a replayed message.
    Replayed,
    /// A dict is not valid JSON (or not an object).
    InvalidJson(&'static str),
    /// The header lacks `msg_type` or `msg_id`.
    BadHeader,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::NoDelimiter => write!(f, "no <IDS|MSG> delimiter"),
            WireError::TooFewFrames(n) => write!(f, "{n} frames after the delimiter, need 5"),
            WireError::BadSignature => write!(f, "missing or wrong HMAC signature"),
            WireError::Replayed => write!(f, "signature already seen (replayed message)"),
            WireError::InvalidJson(part) => write!(f, "{part} is not a JSON object"),
            WireError::BadHeader => write!(f, "header without msg_type or msg_id"),
        }
    }
}

/// One Jupyter message.
#[derive(Clone, Debug)]
pub struct Message {
    /// ZeroMQ routing identities (ROUTER sockets).
    pub identities: Vec<Vec<u8>>,
    /// The header dict.
    pub header: Value,
    /// The parent header dict (`{}` when none).
    pub parent_header: Value,
    /// The metadata dict.
    pub metadata: Value,
    /// The content dict.
    pub content: Value,
    /// Binary buffers.
    pub buffers: Vec<Vec<u8>>,
}

impl Message {
    /// The header's `msg_type`.
    pub fn msg_type(&self) -> &str {
        self.header["msg_type"].as_str().unwrap_or("")
    }

    /// A message of `msg_type` answering `parent` (same identities, parent header set).
    pub fn reply_to(parent: &Message, session: &str, msg_type: &str, content: Value) -> Message {
        Message {
            identities: parent.identities.clone(),
            header: new_header(session, msg_type),
            parent_header: parent.header.clone(),
            metadata: json!({}),
            content,
            buffers: Vec::new(),
        }
    }
}

/// A fresh header.
pub fn new_header(session: &str, msg_type: &str) -> Value {
    json!({
        "msg_id": uuid::Uuid::new_v4().to_string(),
        "session": session,
        "username": "tensorbook",
        "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "msg_type": msg_type,
        "version": PROTOCOL_VERSION,
    })
}

/// Signatures already received, with their arrival order for eviction.
#[derive(Default)]
struct Seen {
    set: HashSet<Vec<u8>>,
    order: VecDeque<Vec<u8>>,
}

/// Signs outgoing messages and checks incoming ones.
pub struct Signer {
    key: Option<Vec<u8>>,
    seen: Mutex<Seen>,
}

impl Signer {
    /// A signer for `key`; an empty key disables signing, as the spec allows.
    pub fn new(key: &str) -> Signer {
        Signer {
            key: (!key.is_empty()).then(|| key.as_bytes().to_vec()),
            seen: Mutex::new(Seen::default()),
        }
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        let key = self.key.as_ref()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
        for p in parts {
            mac.update(p);
        }
        Some(mac)
    }

    /// The hex signature of the four dicts (empty when signing is off).
    pub fn sign(&self, parts: &[&[u8]]) -> String {
        self.mac(parts)
            .map(|m| hex::encode(m.finalize().into_bytes()))
            .unwrap_or_default()
    }

    fn verify(&self, signature: &[u8], parts: &[&[u8]]) -> Result<(), WireError> {
        let Some(mac) = self.mac(parts) else {
            return Ok(());
        };
        let raw = hex::decode(signature).map_err(|_| WireError::BadSignature)?;
        // verify_slice compares in constant time.
        mac.verify_slice(&raw)
            .map_err(|_| WireError::BadSignature)?;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.set.insert(raw.clone()) {
            return Err(WireError::Replayed);
        }
        seen.order.push_back(raw);
        if seen.order.len() > REPLAY_WINDOW {
            if let Some(old) = seen.order.pop_front() {
                seen.set.remove(&old);
            }
        }
        Ok(())
    }

    /// Parses and authenticates a multipart message.
    pub fn decode(&self, frames: Vec<Vec<u8>>) -> Result<Message, WireError> {
        let at = frames
            .iter()
            .position(|f| f == DELIMITER)
            .ok_or(WireError::NoDelimiter)?;
        let rest = &frames[at + 1..];
        if rest.len() < 5 {
            return Err(WireError::TooFewFrames(rest.len()));
        }
        let dicts: Vec<&[u8]> = rest[1..5].iter().map(|f| f.as_slice()).collect();
        self.verify(&rest[0], &dicts)?;
        let parse = |i: usize, name: &'static str| -> Result<Value, WireError> {
            serde_json::from_slice::<Value>(dicts[i])
                .ok()
                .filter(Value::is_object)
                .ok_or(WireError::InvalidJson(name))
        };
        let header = parse(0, "header")?;
        if !header["msg_type"].is_string() || !header["msg_id"].is_string() {
            return Err(WireError::BadHeader);
        }
        Ok(Message {
            identities: frames[..at].to_vec(),
            header,
            parent_header: parse(1, "parent_header")?,
            metadata: parse(2, "metadata")?,
            content: parse(3, "content")?,
            buffers: rest[5..].to_vec(),
        })
    }

    /// Serialises and signs a message into frames.
    pub fn encode(&self, msg: &Message) -> Vec<Vec<u8>> {
        let dicts: Vec<Vec<u8>> = [&msg.header, &msg.parent_header, &msg.metadata, &msg.content]
            .iter()
            .map(|v| serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec()))
            .collect();
        let refs: Vec<&[u8]> = dicts.iter().map(|d| d.as_slice()).collect();
        let mut frames = msg.identities.clone();
        frames.push(DELIMITER.to_vec());
        frames.push(self.sign(&refs).into_bytes());
        frames.extend(dicts);
        frames.extend(msg.buffers.iter().cloned());
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(signer: &Signer) -> Vec<Vec<u8>> {
        let msg = Message {
            identities: vec![b"id".to_vec()],
            header: new_header("s", "kernel_info_request"),
            parent_header: json!({}),
            metadata: json!({}),
            content: json!({}),
            buffers: vec![b"raw".to_vec()],
        };
        signer.encode(&msg)
    }

    #[test]
    fn round_trip_and_replay() {
        let signer = Signer::new("secret");
        let frames = sample(&signer);
        let msg = signer.decode(frames.clone()).expect("valid");
        assert_eq!(msg.msg_type(), "kernel_info_request");
        assert_eq!(msg.identities, vec![b"id".to_vec()]);
        assert_eq!(msg.buffers, vec![b"raw".to_vec()]);
        assert_eq!(signer.decode(frames).unwrap_err(), WireError::Replayed);
    }

    #[test]
    fn bad_signatures_and_garbage_are_refused() {
        let signer = Signer::new("secret");
        let other = Signer::new("other");
        assert_eq!(
            signer.decode(sample(&other)).unwrap_err(),
            WireError::BadSignature
        );
        let mut frames = sample(&signer);
        frames[2] = b"zz-not-hex".to_vec();
        assert_eq!(signer.decode(frames).unwrap_err(), WireError::BadSignature);
        let mut frames = sample(&signer);
        frames[2] = Vec::new();
        assert_eq!(signer.decode(frames).unwrap_err(), WireError::BadSignature);
        assert_eq!(
            signer.decode(vec![b"junk".to_vec()]).unwrap_err(),
            WireError::NoDelimiter
        );
        let short = vec![DELIMITER.to_vec(), b"x".to_vec()];
        assert_eq!(
            signer.decode(short).unwrap_err(),
            WireError::TooFewFrames(1)
        );
        let unsigned = Signer::new("");
        let mut frames = sample(&unsigned);
        frames[3] = b"not json".to_vec();
        assert_eq!(
            unsigned.decode(frames).unwrap_err(),
            WireError::InvalidJson("header")
        );
    }

    #[test]
    fn buffers_are_not_signed() {
        let signer = Signer::new("k");
        let mut frames = sample(&signer);
        frames.last_mut().expect("buffer").push(b'!');
        assert!(signer.decode(frames).is_ok());
    }
}
