//! The handshake a connection runs once its byte stream is up and before
//! the clock starts: `HELLO 3` (with `AUTH` inside it) or `AUTH`, then
//! `SELECT`, then `CLIENT SETNAME respbench`, sent in one write and answered
//! in order. Paired with `packages/cli/src/engine-js/handshake.ts`: the same
//! commands, the same bytes, the same messages.
//!
//! A plan that asks for none of it (no password, no `--dbnum`, RESP2) sends
//! nothing: a server that knows only SET/GET-shaped commands sees the same
//! traffic as before. The password never appears in a message: error texts
//! name the command, never its arguments.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};

use crate::plan::Plan;
use crate::progress::RunControl;
use crate::reply::{ReplyKind, ReplyScanner, Scan};

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum ConnectError {
    /// Cancelled while connecting.
    Interrupted,
    /// Refused, unresolvable, timed out, TLS refused…: the text for the user.
    Failed(String),
}

/// The name a connection gives itself (CLIENT LIST shows it).
pub const CLIENT_NAME: &str = "respbench";
/// The type byte of a RESP3 push frame, which answers no request.
const PUSH: u8 = b'>';
/// How often a pending handshake looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(20);
/// Longest error reply text kept for a message, as the TS engine.
const MAX_TEXT: usize = 300;

/// One command of the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub args: Vec<String>,
    /// How messages name it: "AUTH", "HELLO 3", "SELECT 3" (never the password).
    pub what: String,
    /// An error reply to it does not fail the handshake (the client name is a courtesy).
    pub optional: bool,
}

/// What the plan asks to send before the load; empty when nothing.
pub fn steps(plan: &Plan) -> Vec<Step> {
    let mut steps = Vec::new();
    let password = plan.password.as_ref().map(|p| p.expose().to_string());
    if plan.resp3 {
        let mut args = vec!["HELLO".to_string(), "3".to_string()];
        if let Some(p) = &password {
            args.extend(["AUTH".to_string(), plan.user.clone().unwrap_or_else(|| "default".into()), p.clone()]);
        }
        steps.push(Step { args, what: "HELLO 3".into(), optional: false });
    } else if let Some(p) = &password {
        let args = match &plan.user {
            Some(u) => vec!["AUTH".to_string(), u.clone(), p.clone()],
            None => vec!["AUTH".to_string(), p.clone()],
        };
        steps.push(Step { args, what: "AUTH".into(), optional: false });
    }
    if let Some(db) = plan.dbnum {
        steps.push(Step { args: vec!["SELECT".into(), db.to_string()], what: format!("SELECT {db}"), optional: false });
    }
    if plan.client_tracking {
        steps.push(Step {
            args: vec!["CLIENT".into(), "TRACKING".into(), "on".into()],
            what: "CLIENT TRACKING on".into(),
            optional: false,
        });
    }
    // --read-from: a cluster replica serves reads of its primary's slots only after READONLY.
    if plan.read_only {
        steps.push(Step { args: vec!["READONLY".into()], what: "READONLY".into(), optional: false });
    }
    if !steps.is_empty() {
        steps.push(Step {
            args: vec!["CLIENT".into(), "SETNAME".into(), CLIENT_NAME.into()],
            what: "CLIENT SETNAME".into(),
            optional: true,
        });
    }
    steps
}

/// The steps as RESP arrays of bulk strings, one buffer.
pub fn bytes(steps: &[Step]) -> Vec<u8> {
    let mut out = Vec::new();
    for step in steps {
        out.extend_from_slice(format!("*{}\r\n", step.args.len()).as_bytes());
        for arg in &step.args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    out
}

/// `text` with every occurrence of the password replaced by `***`.
pub fn redact(text: &str, plan: &Plan) -> String {
    match plan.password.as_ref().map(|p| p.expose()) {
        Some(p) if !p.is_empty() => text.replace(p, "***"),
        _ => text.to_string(),
    }
}

fn user_name(plan: &Plan) -> &str {
    plan.user.as_deref().unwrap_or("default")
}

/// An error reply that refuses a login (Redis: WRONGPASS; older servers and
/// look-alikes: "invalid password", "AUTH …"), as the TS engine reads it.
fn refuses_login(text: &str) -> bool {
    let lower = text.to_lowercase();
    text.starts_with("WRONGPASS")
        || lower.split(|c: char| !c.is_alphanumeric()).any(|w| w.starts_with("auth") || w.starts_with("password"))
}

/// What an error reply (its text without the '-') to a handshake step means
/// for the user, worded as the TS engine words it.
pub fn failure_text(plan: &Plan, step: &Step, error: &str) -> String {
    let text = redact(error, plan);
    let user = user_name(plan);
    let first_word = |t: &str, w: &str| t == w || t.starts_with(&format!("{w} "));
    let command = step.args[0].as_str();
    if first_word(&text, "NOAUTH") {
        return format!(
            "the server requires a password ({} answered: {text}): give it with -a/--pass or REDISCLI_AUTH",
            step.what
        );
    }
    if first_word(&text, "NOPERM") {
        let name = step.what.split(' ').next().unwrap_or("");
        return format!("user '{user}' may not run {name} ({text})");
    }
    if command == "HELLO" && (first_word(&text, "NOPROTO") || text.to_lowercase().contains("unknown command")) {
        return format!("HELLO 3 failed: {text} (the server does not speak RESP3: leave out -3/--resp3)");
    }
    // HELLO 3 is about logging in only when it carried a password the server refused.
    if command == "AUTH" || (command == "HELLO" && plan.password.is_some() && refuses_login(&text)) {
        return format!("authentication failed for user '{user}': {text}");
    }
    if command == "HELLO" {
        return format!("HELLO 3 failed: {text}");
    }
    if command == "SELECT" {
        return format!("cannot select database {}: {text}", plan.dbnum.unwrap_or(0));
    }
    format!("{} failed: {text}", step.what)
}

/// What a run-time error reply means when it ends the run at once: NOAUTH
/// (not, or no longer, logged in) and NOPERM (the ACL user may not run this
/// command or touch these keys) would answer every request the same way, so
/// a rate of them is no measurement. None for any other error reply.
/// `payload`: the reply's text without the '-'.
pub fn fatal_reply_text(payload: &[u8], user: Option<&str>) -> Option<String> {
    if payload.first() != Some(&b'N') {
        return None;
    }
    let text: String = payload[..payload.len().min(200)].iter().map(|&b| b as char).collect();
    if text.starts_with("NOAUTH") {
        return Some(format!("the server requires a password ({text}): give it with -a/--pass or REDISCLI_AUTH"));
    }
    if text.starts_with("NOPERM") {
        return Some(format!("user '{}' is not allowed this ({text})", user.unwrap_or("default")));
    }
    None
}

/// Runs the plan's handshake over a connected non-blocking stream: one
/// write, then one reply per step, in order, within `timeout`. A push frame
/// before a reply is skipped. Errors carry the one-line reason, prefixed
/// with `host:port` as the TS engine's.
pub fn run<S: Read + Write + Source>(
    stream: &mut S,
    plan: &Plan,
    timeout: Duration,
    control: &RunControl,
) -> Result<(), ConnectError> {
    let steps = steps(plan);
    if steps.is_empty() {
        return Ok(());
    }
    let at = format!("{}:{}", plan.host, plan.port);
    let fail = |text: String| ConnectError::Failed(format!("{at}: {text}"));
    let io_fail = |e: io::Error| fail(format!("handshake: {e}"));
    let out = bytes(&steps);
    let mut poll = Poll::new().map_err(io_fail)?;
    poll.registry().register(stream, Token(0), Interest::READABLE | Interest::WRITABLE).map_err(io_fail)?;
    let result = exchange(stream, &mut poll, plan, &steps, &out, timeout, control);
    let _ = poll.registry().deregister(stream);
    match result {
        Ok(None) => Ok(()),
        Ok(Some(text)) => Err(fail(text)),
        Err(Exchange::Interrupted) => Err(ConnectError::Interrupted),
        Err(Exchange::Failed(text)) => Err(fail(text)),
    }
}

enum Exchange {
    Interrupted,
    Failed(String),
}

/// Writes `out` and reads a reply per step; Ok(Some(text)) when a step was
/// refused, with what that means.
fn exchange<S: Read + Write>(
    stream: &mut S,
    poll: &mut Poll,
    plan: &Plan,
    steps: &[Step],
    out: &[u8],
    timeout: Duration,
    control: &RunControl,
) -> Result<Option<String>, Exchange> {
    let deadline = Instant::now() + timeout;
    let mut events = Events::with_capacity(4);
    let mut written = 0;
    let mut input: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let mut pos = 0;
    let mut answered = 0;
    let mut failure: Option<String> = None;
    let mut scanner = ReplyScanner::new();
    let closed = |answered: usize, failure: &Option<String>| {
        let why = failure.as_ref().map(|f| format!(" ({f})")).unwrap_or_default();
        Exchange::Failed(format!(
            "the server closed the connection during the handshake after {answered} of {} replies{why}",
            steps.len()
        ))
    };
    loop {
        while written < out.len() {
            match stream.write(&out[written..]) {
                Ok(0) => return Err(closed(answered, &failure)),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Exchange::Failed(format!("handshake: {e}"))),
            }
        }
        let mut eof = false;
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Exchange::Failed(format!("handshake: {e}"))),
            }
        }
        while answered < steps.len() && pos < input.len() {
            let end = match scanner.scan(&input, pos) {
                Ok(Scan::Complete(end)) => end,
                Ok(Scan::Incomplete) => break,
                Err(e) => {
                    return Err(Exchange::Failed(format!(
                        "protocol error in the handshake's replies: {}: \"{}\"",
                        e.reason, e.bytes
                    )));
                }
            };
            let push = input[pos] == PUSH;
            pos = end;
            if push {
                continue;
            }
            let step = &steps[answered];
            answered += 1;
            if scanner.kind == ReplyKind::Error && !step.optional && failure.is_none() {
                let payload = scanner.payload(&input);
                let text = String::from_utf8_lossy(&payload[..payload.len().min(MAX_TEXT)]).into_owned();
                failure = Some(failure_text(plan, step, &text));
            }
        }
        if answered == steps.len() {
            return Ok(failure);
        }
        if eof {
            return Err(closed(answered, &failure));
        }
        if control.is_cancelled() {
            return Err(Exchange::Interrupted);
        }
        let now = Instant::now();
        if now >= deadline {
            let what = steps.get(answered).map_or("the last step", |s| s.what.as_str());
            let ms = timeout.as_millis();
            return Err(Exchange::Failed(format!("no reply to the handshake ({what}) within {ms} ms (--timeout)")));
        }
        if let Err(e) = poll.poll(&mut events, Some(SLICE.min(deadline - now))) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(Exchange::Failed(format!("handshake: {e}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Secret;

    fn plan() -> Plan {
        Plan::new("127.0.0.1", 6379)
    }

    /// The same literal as packages/cli/test/handshake.test.ts: both engines send these bytes.
    #[test]
    fn the_bytes_of_each_handshake_match_the_ts_engine() {
        let mut p = plan();
        assert!(steps(&p).is_empty());
        p.password = Some(Secret::new("s3cret"));
        assert_eq!(
            String::from_utf8(bytes(&steps(&p))).unwrap(),
            "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n"
        );
        p.user = Some("bench".into());
        p.dbnum = Some(3);
        p.resp3 = true;
        assert_eq!(
            String::from_utf8(bytes(&steps(&p))).unwrap(),
            "*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$5\r\nbench\r\n$6\r\ns3cret\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n"
        );
    }

    /// The same literal as packages/cli/test/handshake.test.ts.
    #[test]
    fn client_tracking_comes_after_select_and_before_the_name() {
        let mut p = plan();
        p.resp3 = true;
        p.client_tracking = true;
        assert_eq!(
            String::from_utf8(bytes(&steps(&p))).unwrap(),
            "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n"
        );
    }

    /// The same literal as packages/cli/test/handshake.test.ts.
    #[test]
    fn readonly_for_a_replica_socket_comes_before_the_name() {
        let mut p = plan();
        p.read_only = true;
        assert_eq!(
            String::from_utf8(bytes(&steps(&p))).unwrap(),
            "*1\r\n$8\r\nREADONLY\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n"
        );
    }

    #[test]
    fn a_refused_hello_3_says_hello_3_failed_unless_it_refused_the_password() {
        let mut p = plan();
        p.resp3 = true;
        let s = steps(&p);
        assert_eq!(failure_text(&p, &s[0], "ERR HELLO is disabled here"), "HELLO 3 failed: ERR HELLO is disabled here");
        assert_eq!(
            failure_text(&p, &s[0], "ERR unknown command 'HELLO'"),
            "HELLO 3 failed: ERR unknown command 'HELLO' (the server does not speak RESP3: leave out -3/--resp3)"
        );
        p.password = Some(Secret::new("pw"));
        let s = steps(&p);
        assert_eq!(failure_text(&p, &s[0], "ERR protocol 3 refused"), "HELLO 3 failed: ERR protocol 3 refused");
        assert_eq!(
            failure_text(&p, &s[0], "WRONGPASS invalid username-password pair or user is disabled."),
            "authentication failed for user 'default': WRONGPASS invalid username-password pair or user is disabled."
        );
    }

    #[test]
    fn failures_name_the_user_and_command_never_the_password() {
        let mut p = plan();
        p.password = Some(Secret::new("s3cret"));
        p.user = Some("bench".into());
        p.dbnum = Some(3);
        let s = steps(&p);
        assert_eq!(
            failure_text(&p, &s[0], "WRONGPASS invalid username-password pair or user is disabled."),
            "authentication failed for user 'bench': WRONGPASS invalid username-password pair or user is disabled."
        );
        assert_eq!(
            failure_text(&p, &s[1], "NOPERM this user has no permissions to run the 'select' command"),
            "user 'bench' may not run SELECT (NOPERM this user has no permissions to run the 'select' command)"
        );
        assert_eq!(
            failure_text(&p, &s[1], "ERR DB index is out of range"),
            "cannot select database 3: ERR DB index is out of range"
        );
        assert!(!failure_text(&p, &s[0], "ERR echo s3cret").contains("s3cret"));
        assert_eq!(fatal_reply_text(b"ERR x", None), None);
        assert!(fatal_reply_text(b"NOAUTH Authentication required.", None).unwrap().contains("requires a password"));
    }

    /// `--resp3`: every RESP3 type scans as one reply (the same stream as
    /// packages/cli/test/handshake.test.ts), an attribute with the reply it annotates.
    #[test]
    fn resp3_replies_count_as_one_reply_each() {
        let replies: [&[u8]; 9] = [
            b"%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n",
            b"~2\r\n+a\r\n+b\r\n",
            b",3.14\r\n",
            b"#t\r\n",
            b"=15\r\ntxt:Some string\r\n",
            b"(3492890328409238509324850943850943825024385\r\n",
            b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n$5\r\nvalue\r\n",
            b"_\r\n",
            b"!21\r\nSYNTAX invalid syntax\r\n",
        ];
        let buf = replies.concat();
        let mut scanner = ReplyScanner::new();
        let mut at = 0;
        let mut ends = Vec::new();
        while at < buf.len() {
            match scanner.scan(&buf, at).unwrap() {
                Scan::Complete(end) => at = end,
                Scan::Incomplete => panic!("incomplete at {at}"),
            }
            ends.push(at);
        }
        let expected: Vec<usize> =
            replies.iter().scan(0, |sum, r| Some(*sum + r.len()).inspect(|s| *sum = *s)).collect();
        assert_eq!(ends, expected);
        scanner.scan(replies[6], 0).unwrap();
        assert_eq!(scanner.payload(replies[6]), b"value");
        assert_eq!(scanner.kind, ReplyKind::Bulk);
    }

    #[test]
    fn the_password_does_not_show_in_debug_output() {
        let mut p = plan();
        p.password = Some(Secret::new("s3cret"));
        assert!(!format!("{p:?}").contains("s3cret"));
    }
}
