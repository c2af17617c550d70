//! Jupyter's side of the kernel: the wire protocol, the sockets and the request handlers, the
//! kernelspec, history and code completeness. It reaches cells only through the
//! [`Engine`](crate::engine::Engine)'s API and never calls evcxr (the engine knows no Jupyter
//! message in return) — evcxr's own split between `evcxr` and `evcxr_jupyter`.
//!
//! | module | job |
//! |---|---|
//! | [`connection`] | the connection file, read and checked |
//! | [`wire`] | multipart frames, HMAC-SHA256 signatures, replay window |
//! | [`server`] | the five sockets (tcp or ipc), shell/control loops, stop_on_error aborts, stdin |
//! | [`requests`] | each request's answer, and the engine's output as iopub messages |
//! | [`display`] | the display socket's messages as display_data / update / clear_output |
//! | [`comms`] | comms (widgets): relayed both ways, mirrored, listed, lost with their process |
//! | [`kernelspec`] | `kernel install/uninstall/list` by Jupyter's data-dir rules |
//! | [`history`] | per-kernelspec execution history |
//! | [`completeness`] | `is_complete` |

pub mod comms;
pub mod completeness;
pub mod connection;
pub mod display;
pub mod failure;
pub mod history;
pub mod kernelspec;
pub mod requests;
pub mod server;
pub mod wire;
