//! What the kernel and the code running in its cells agree on, and every setting tensorbook
//! takes from its environment — written down once, here.
//!
//! The kernel (crate `tensorbook-kernel`) and the runtime linked into every cell are separate
//! programs that talk through environment variables, marker lines on stdout/stderr, a local
//! display socket and a session file. Both crates take the names and formats from this module
//! and nothing else in either names an environment variable or a marker (a test in
//! `runtime/tests/contract.rs` scans the sources for it). The runtime's tensors, ops and
//! backends read no environment: they ask [`env`] for typed settings.
//!
//! | part | what |
//! |---|---|
//! | [`env`] | every variable by name, and typed readers for the settings |
//! | [`markers`] | marker lines printed by cells or the evaluation process, evcxr's included |
//! | [`display`] | the display socket's messages (`display`, `update`, `clear`, comms) and the way back (`Inbound`) |
//! | [`keep`] | the keep socket: variables the kernel keeps through a restart of the process |
//! | [`variables`] | a tensor's description for `:vars` |
//! | [`session_file`] | the file that holds the session default across processes |
//! | [`session_command`] | `:client` and `:clients` answered in the evaluation process |
//! | [`interrupt_flag`] | how the evaluation process publishes its interrupt flag |

pub mod display;
pub mod env;
pub mod interrupt_flag;
pub mod keep;
pub mod markers;
pub mod session_command;
pub mod session_file;
pub mod variables;
