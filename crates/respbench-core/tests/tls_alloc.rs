//! What TLS costs the hot path in allocations: rustls's buffered API
//! allocates per TLS record (not per request), so this measures and bounds it
//! rather than asking for zero as no_alloc.rs does for plain TCP. Against a
//! real redis-server with a TLS port on a certificate made with openssl here;
//! skipped when either is missing. One test in this binary, so nothing else
//! allocates while it counts.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use respbench_core::{Mode, Plan, TlsPlan};

mod counting_alloc;
mod openssl;

use counting_alloc::allocations_for;
use openssl::openssl;

struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn tls_allocations_are_per_record_not_per_request() {
    let dir = std::env::temp_dir().join(format!("respbench-tls-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let made = openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=respbench test ca",
        ],
    ) && std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").is_ok()
        && openssl(
            &dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        )
        && openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "ext",
            ],
        );
    if !made {
        eprintln!("skipped: openssl is not here");
        return;
    }
    let port = free_port();
    let file = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let child = Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--tls-port",
            &port.to_string(),
        ])
        .args([
            "--tls-cert-file",
            &file("server.pem"),
            "--tls-key-file",
            &file("server.key"),
            "--tls-ca-cert-file",
            &file("ca.pem"),
        ])
        .args(["--tls-auth-clients", "no", "--dir", &file("")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(child) = child else {
        eprintln!("skipped: redis-server is not here");
        return;
    };
    let _redis = Redis(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not open its TLS port");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut plan = Plan::new("127.0.0.1", port);
    plan.tls = Some(TlsPlan { cacert: Some(file("ca.pem")), ..TlsPlan::default() });
    plan.mode = Mode::Set;
    plan.pipeline = 64;
    plan.keyspace = 1000;
    let _warm = allocations_for(Plan { requests: 1000, ..plan.clone() });
    let few = allocations_for(Plan { requests: 20_000, ..plan.clone() });
    let many = allocations_for(Plan { requests: 200_000, ..plan.clone() });
    let per_request = (many.saturating_sub(few)) as f64 / 180_000.0;
    eprintln!(
        "TLS, pipeline 64, SET 32 B: {few} allocations for 20k requests, {many} for 200k: {per_request:.4} per request"
    );
    // A record carries a whole batch (up to 16 KiB): well under one allocation per request.
    assert!(per_request < 0.25, "{per_request} allocations per request over TLS");
    // One request per record each way: the per-record cost shows whole.
    let p1 = Plan { pipeline: 1, ..plan.clone() };
    let few = allocations_for(Plan { requests: 2_000, ..p1.clone() });
    let many = allocations_for(Plan { requests: 12_000, ..p1 });
    let per_request = (many.saturating_sub(few)) as f64 / 10_000.0;
    eprintln!("TLS, pipeline 1, SET 32 B: {per_request:.4} allocations per request");
    assert!(per_request < 4.0, "{per_request} allocations per request over TLS at pipeline 1");
    let _ = std::fs::remove_dir_all(&dir);
}
