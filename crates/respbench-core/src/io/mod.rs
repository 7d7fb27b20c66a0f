//! Which I/O backend a run's worker threads use: mio (epoll), or io_uring
//! where the kernel and the sandbox allow it (`--io auto|uring|epoll`). The
//! choice is made once per run, before any socket is opened; the worker
//! loop is compiled once per backend (`crate::worker::Backend`).
//!
//! io_uring needs, beyond `io_uring_setup` itself: `IORING_SETUP_SINGLE_ISSUER`
//! and `IORING_SETUP_DEFER_TASKRUN` (Linux 6.1; a kernel that has them also
//! has multishot `recv`, 6.0), a provided-buffer ring
//! (`IORING_REGISTER_PBUF_RING`, 5.19) and waits with a timeout
//! (`IORING_FEAT_EXT_ARG`, 5.11). A kernel or sandbox without one of them
//! runs on epoll: `auto` says why in one line, `uring` refuses to run.

pub mod uring;
pub mod uring_buffers;

use std::io;

/// `--io`, as the user gave it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoChoice {
    /// io_uring where it works, else epoll (with the reason).
    #[default]
    Auto,
    Uring,
    Epoll,
}

impl IoChoice {
    pub fn parse(text: &str) -> Option<IoChoice> {
        match text {
            "auto" => Some(IoChoice::Auto),
            "uring" => Some(IoChoice::Uring),
            "epoll" => Some(IoChoice::Epoll),
            _ => None,
        }
    }
}

/// The backend a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Uring,
    Epoll,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Uring => "io_uring",
            Backend::Epoll => "epoll",
        }
    }
}

/// What a run will use, and (when that is not what was asked for, or
/// `auto` fell back) why, for the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoDecision {
    pub backend: Backend,
    pub note: Option<String>,
}

/// Set to `1` at start, it makes io_uring's setup count as refused, as a
/// seccomp profile that forbids `io_uring_setup` would: the fallback's test switch.
pub const REFUSE_ENV: &str = "RESPBENCH_IO_URING_REFUSE";

/// Decides the backend for `choice` (`tls`: the run uses TLS, which stays on
/// epoll). Err: `--io uring` where io_uring cannot work, with the reason.
pub fn decide(choice: IoChoice, tls: bool) -> Result<IoDecision, String> {
    match choice {
        IoChoice::Epoll => Ok(IoDecision { backend: Backend::Epoll, note: None }),
        _ if tls => Ok(IoDecision {
            backend: Backend::Epoll,
            note: Some("TLS runs on epoll (io_uring carries plain TCP and unix sockets)".into()),
        }),
        IoChoice::Uring => match usable() {
            Ok(()) => Ok(IoDecision { backend: Backend::Uring, note: None }),
            Err(why) => Err(format!("--io uring: {why}")),
        },
        IoChoice::Auto => Ok(match usable() {
            Ok(()) => IoDecision { backend: Backend::Uring, note: None },
            Err(why) => IoDecision { backend: Backend::Epoll, note: Some(format!("{why}; running on epoll")) },
        }),
    }
}

/// Whether this process can run the io_uring backend: the switch, then a
/// real ring with the features it needs (looked at once per process).
pub fn usable() -> Result<(), String> {
    if std::env::var(REFUSE_ENV).is_ok_and(|v| v == "1") {
        return Err(format!("io_uring refused by the sandbox (EPERM, simulated by {REFUSE_ENV}=1)"));
    }
    static PROBED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBED.get_or_init(|| uring::Ring::new(8, 1, 64).map(drop).map_err(|e| refusal(&e))).clone()
}

/// Why io_uring could not be set up, in one line.
pub fn refusal(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => "io_uring refused by the sandbox (EPERM)".into(),
        Some(libc::ENOSYS) => "the kernel has no io_uring (ENOSYS)".into(),
        Some(libc::EINVAL) => {
            "the kernel's io_uring lacks what this backend needs (DEFER_TASKRUN, buffer rings: Linux 6.1) (EINVAL)"
                .into()
        }
        Some(libc::ENOMEM) => "io_uring could not lock its memory (ENOMEM: raise ulimit -l)".into(),
        _ => format!("io_uring cannot be set up: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoll_is_what_it_says_and_tls_stays_on_epoll_whatever_was_asked() {
        assert_eq!(decide(IoChoice::Epoll, false), Ok(IoDecision { backend: Backend::Epoll, note: None }));
        for choice in [IoChoice::Auto, IoChoice::Uring] {
            let d = decide(choice, true).unwrap();
            assert_eq!(d.backend, Backend::Epoll);
            assert_eq!(d.note.as_deref(), Some("TLS runs on epoll (io_uring carries plain TCP and unix sockets)"));
        }
    }

    #[test]
    fn auto_is_io_uring_exactly_when_io_uring_is_usable() {
        let auto = decide(IoChoice::Auto, false).unwrap();
        match usable() {
            Ok(()) => {
                assert_eq!(auto.backend, Backend::Uring);
                assert_eq!(decide(IoChoice::Uring, false).unwrap().backend, Backend::Uring);
            }
            Err(why) => {
                assert_eq!(
                    auto,
                    IoDecision { backend: Backend::Epoll, note: Some(format!("{why}; running on epoll")) }
                );
                assert_eq!(decide(IoChoice::Uring, false), Err(format!("--io uring: {why}")));
            }
        }
    }

    #[test]
    fn a_refused_setup_is_named_for_what_the_user_can_change() {
        assert_eq!(refusal(&io::Error::from_raw_os_error(libc::EPERM)), "io_uring refused by the sandbox (EPERM)");
        assert_eq!(refusal(&io::Error::from_raw_os_error(libc::ENOSYS)), "the kernel has no io_uring (ENOSYS)");
    }
}
