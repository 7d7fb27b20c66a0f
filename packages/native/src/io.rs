//! `--io`: the backend a run's worker threads will use, asked before the
//! run so the header can say it (and `--io uring` can refuse to start).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use respbench_core::io::{IoChoice, decide};

/// What `--io` resolves to on this machine.
#[napi(object)]
pub struct NativeIoBackend {
    /// "io_uring" or "epoll"; absent when `error` says why it cannot run.
    pub backend: Option<String>,
    /// Why it is not what was asked for (auto falling back, TLS on epoll).
    pub note: Option<String>,
    /// `--io uring` where io_uring cannot work: the reason.
    pub error: Option<String>,
}

/// The Plan's `io` field: absent = auto.
pub fn io_choice(io: Option<String>) -> Result<IoChoice> {
    match io.as_deref() {
        None => Ok(IoChoice::Auto),
        Some(text) => IoChoice::parse(text).ok_or_else(|| {
            Error::new(Status::InvalidArg, format!("io: expected auto, uring or epoll, got \"{text}\""))
        }),
    }
}

/// Which backend a run with `io` (and `tls`) would use here.
#[napi]
pub fn io_backend(io: Option<String>, tls: bool) -> Result<NativeIoBackend> {
    Ok(match decide(io_choice(io)?, tls) {
        Ok(d) => NativeIoBackend { backend: Some(d.backend.name().into()), note: d.note, error: None },
        Err(why) => NativeIoBackend { backend: None, note: None, error: Some(why) },
    })
}
