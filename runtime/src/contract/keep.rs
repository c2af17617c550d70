//! The keep socket: how a cell hands the kernel what it needs to bring the session's variables
//! back after the evaluation process dies, and how the next process takes them back.
//!
//! The kernel listens on a Unix socket in its state directory ([`SOCKET_FILE`], named to the
//! evaluation process by [`super::env::KEEP_SOCKET`]). Each message is one JSON line; a line
//! for a tensor carries the descriptor of the tensor's shared memory (`SCM_RIGHTS`) with its
//! first byte, so the kernel holds the memory itself.
//!
//! * A cell that stores variables sends one [`Request::Keep`] per variable, then
//!   [`Request::Done`], and waits for the one-line answer `done`.
//! * A restoring cell sends [`Request::Take`] and reads back the [`Kept`] line (with the
//!   descriptor for a tensor) or a `missing` line.

use std::collections::VecDeque;
use std::io::{IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use serde_json::{json, Value as Json};

/// The socket's file name in the kernel's state directory.
pub const SOCKET_FILE: &str = "keep.sock";

/// What survives of one variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A host tensor whose elements are in the shared memory sent with the line.
    Tensor {
        /// Its dtype (`f32`).
        dtype: String,
        /// Its shape.
        shape: Vec<usize>,
        /// Its placement (`host:0`, `binary`).
        device: String,
        /// Its number of elements.
        len: usize,
        /// Its axis names (Nx's `names:`), one per axis; empty when no axis has a name.
        names: Vec<Option<String>>,
    },
    /// A plain value (a number, bool, char, string or vector of numbers), encoded as text.
    Plain {
        /// The encoding (see `tensorbook::keep::KeptValue`).
        text: String,
    },
    /// Nothing can be kept; why.
    Lost {
        /// The reason, for the user.
        why: String,
    },
}

/// One variable as the kernel keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The variable's name.
    pub name: String,
    /// Its Rust type as `std::any::type_name` spells it (restoring checks it).
    pub type_name: String,
    /// What is kept of it.
    pub value: Value,
}

impl Kept {
    /// True when a shared-memory descriptor goes with this line.
    pub fn has_memory(&self) -> bool {
        matches!(self.value, Value::Tensor { .. })
    }

    /// The record as JSON (what [`Kept::from_json`] reads).
    pub fn to_json(&self) -> Json {
        let value = match &self.value {
            Value::Tensor {
                dtype,
                shape,
                device,
                len,
                names,
            } => {
                json!({ "kind": "tensor", "dtype": dtype, "shape": shape, "device": device, "len": len, "names": names })
            }
            Value::Plain { text } => json!({ "kind": "plain", "text": text }),
            Value::Lost { why } => json!({ "kind": "lost", "why": why }),
        };
        json!({ "name": self.name, "type_name": self.type_name, "value": value })
    }

    /// Reads a record written by [`Kept::to_json`]; the error says what is missing.
    pub fn from_json(v: &Json) -> Result<Kept, String> {
        let text = |v: &Json, key: &str| {
            v.get(key)
                .and_then(Json::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("no `{key}`"))
        };
        let value = v.get("value").ok_or("no `value`")?;
        let value = match value.get("kind").and_then(Json::as_str) {
            Some("tensor") => Value::Tensor {
                dtype: text(value, "dtype")?,
                shape: value
                    .get("shape")
                    .and_then(Json::as_array)
                    .ok_or("no `shape`")?
                    .iter()
                    .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or("a dimension is not a size")?,
                device: text(value, "device")?,
                len: value
                    .get("len")
                    .and_then(Json::as_u64)
                    .and_then(|l| usize::try_from(l).ok())
                    .ok_or("no `len`")?,
                // Absent in records of kernels from before names: no axis named.
                names: match value.get("names").and_then(Json::as_array) {
                    None => Vec::new(),
                    Some(list) => list
                        .iter()
                        .map(|n| match n {
                            Json::Null => Ok(None),
                            Json::String(s) => Ok(Some(s.clone())),
                            _ => Err("an axis name is not a string"),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                },
            },
            Some("plain") => Value::Plain {
                text: text(value, "text")?,
            },
            Some("lost") => Value::Lost {
                why: text(value, "why")?,
            },
            other => return Err(format!("unknown kind {other:?}")),
        };
        Ok(Kept {
            name: text(v, "name")?,
            type_name: text(v, "type_name")?,
            value,
        })
    }
}

/// A message to the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Keep this variable (replacing what was kept under its name).
    Keep(Kept),
    /// The cell's variables are all sent; answer `done`.
    Done,
    /// Send back what is kept under this name.
    Take {
        /// The variable.
        name: String,
    },
}

impl Request {
    /// The JSON line (no newline).
    pub fn to_line(&self) -> String {
        match self {
            Request::Keep(kept) => json!({ "type": "keep", "variable": kept.to_json() }),
            Request::Done => json!({ "type": "done" }),
            Request::Take { name } => json!({ "type": "take", "name": name }),
        }
        .to_string()
    }

    /// Reads one line; the error says what is wrong with it.
    pub fn parse(line: &str) -> Result<Request, String> {
        let v: Json = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
        match v.get("type").and_then(Json::as_str) {
            Some("keep") => Ok(Request::Keep(Kept::from_json(
                v.get("variable").ok_or("no `variable`")?,
            )?)),
            Some("done") => Ok(Request::Done),
            Some("take") => Ok(Request::Take {
                name: v
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or("no `name`")?
                    .to_string(),
            }),
            other => Err(format!("unknown message type {other:?}")),
        }
    }
}

/// The kernel's answer to [`Request::Done`].
pub const DONE: &str = "done";

/// The kernel's answer to a [`Request::Take`] for a name it keeps nothing under.
pub const MISSING: &str = "missing";

/// The answer line to a [`Request::Take`].
pub fn take_answer(kept: Option<&Kept>) -> String {
    kept.map_or_else(|| MISSING.to_string(), |k| k.to_json().to_string())
}

/// Reads a [`take_answer`] line: `None` for [`MISSING`].
pub fn parse_take_answer(line: &str) -> Result<Option<Kept>, String> {
    if line == MISSING {
        return Ok(None);
    }
    let v: Json = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    Kept::from_json(&v).map(Some)
}

/// Longest line either side reads: a plain value is at most a few MiB of text.
pub const MAX_LINE: usize = 64 << 20;

/// A Unix stream read and written in lines, with descriptors passed alongside.
pub struct LineStream {
    stream: UnixStream,
    pending: Vec<u8>,
    fds: VecDeque<OwnedFd>,
}

impl LineStream {
    /// Wraps a connected stream.
    pub fn new(stream: UnixStream) -> LineStream {
        LineStream {
            stream,
            pending: Vec::new(),
            fds: VecDeque::new(),
        }
    }

    /// The stream underneath (for timeouts).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends `line` and a newline, with `fd` attached to its first byte.
    pub fn send(&self, line: &str, fd: Option<BorrowedFd<'_>>) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds: Vec<BorrowedFd<'_>> = fd.into_iter().collect();
        if !fds.is_empty() {
            control.push(SendAncillaryMessage::ScmRights(&fds));
        }
        let sent = rustix::net::sendmsg(
            &self.stream,
            &[IoSlice::new(&bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        (&self.stream).write_all(&bytes[sent..])
    }

    /// The next line (without its newline), or `None` at the end of the stream.
    pub fn receive(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                return String::from_utf8(line[..at].to_vec())
                    .map(Some)
                    .map_err(|_| std::io::Error::other("a line that is not UTF-8"));
            }
            if self.pending.len() > MAX_LINE {
                return Err(std::io::Error::other(format!(
                    "a line longer than {MAX_LINE} bytes"
                )));
            }
            let mut chunk = vec![0u8; 64 << 10];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let got = rustix::net::recvmsg(
                &self.stream,
                &mut [IoSliceMut::new(&mut chunk)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )?;
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(fds) = message {
                    self.fds.extend(fds);
                }
            }
            if got.bytes == 0 {
                return Ok(None);
            }
            self.pending.extend_from_slice(&chunk[..got.bytes]);
        }
    }

    /// The next descriptor received, in the order they were sent.
    pub fn take_fd(&mut self) -> Option<OwnedFd> {
        self.fds.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_reads_back_as_written() {
        let kept = [
            Value::Tensor {
                dtype: "f32".into(),
                shape: vec![2, 3],
                device: "host:0".into(),
                len: 6,
                names: vec![Some("x".into()), None],
            },
            Value::Plain { text: "42".into() },
            Value::Lost {
                why: "a closure".into(),
            },
        ];
        for value in kept {
            let request = Request::Keep(Kept {
                name: "x".into(),
                type_name: "i32".into(),
                value,
            });
            assert_eq!(Request::parse(&request.to_line()), Ok(request));
        }
        for request in [Request::Done, Request::Take { name: "t".into() }] {
            assert_eq!(Request::parse(&request.to_line()), Ok(request));
        }
        assert!(Request::parse("{\"type\":\"keep\"}").is_err());
        assert!(Request::parse("garbage").is_err());
        assert_eq!(parse_take_answer(&take_answer(None)), Ok(None));
    }

    #[test]
    fn lines_and_descriptors_cross_in_order() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (LineStream::new(a), LineStream::new(b));
        let file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut &file, b"payload").unwrap();
        let fd = file.try_clone().unwrap();
        a.send("first", None).unwrap();
        a.send("second", Some(std::os::fd::AsFd::as_fd(&fd)))
            .unwrap();
        let long = "x".repeat(200_000);
        a.send(&long, None).unwrap();
        drop(a);
        assert_eq!(b.receive().unwrap().as_deref(), Some("first"));
        assert_eq!(b.receive().unwrap().as_deref(), Some("second"));
        use std::io::{Read, Seek};
        let mut got = std::fs::File::from(b.take_fd().unwrap());
        let mut all = String::new();
        got.seek(std::io::SeekFrom::Start(0)).unwrap();
        got.read_to_string(&mut all).unwrap();
        assert_eq!(all, "payload");
        assert_eq!(b.receive().unwrap().map(|l| l.len()), Some(200_000));
        assert_eq!(b.receive().unwrap(), None);
        assert!(b.take_fd().is_none());
    }
}
