//! openssl run in a directory, quiet, for the tests that make their own
//! certificates (tls_alloc.rs, and tls_verify.rs's unit tests, which
//! include this file by path): true when it succeeded; false when it failed
//! or is not installed, so the caller can skip.

use std::path::Path;
use std::process::{Command, Stdio};

pub fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
