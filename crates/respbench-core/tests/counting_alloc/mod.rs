//! A global allocator that counts, a server that answers `+OK` without
//! allocating per request, and a run measured in allocations: shared by the
//! no-allocation test binaries (each has one test, so nothing else allocates
//! while it counts).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

use respbench_core::reply::{ReplyScanner, Scan};
use respbench_core::{Plan, RunControl, run};

struct Counting;

pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers every complete command with `+OK`, from buffers allocated once per connection.
#[allow(dead_code)] // not every binary that counts uses the +OK server
pub fn ok_server() -> u16 {
    answer_server(b"+OK\r\n".to_vec())
}

/// A `CLUSTER …` command's answer: refused, so a topology refresh
/// (`--cluster`) asks once per phase and not again. Answered like the data
/// commands, it would be no slot map, asked again after every stale MOVED
/// (at most every 100 ms), each time on a new connection whose server
/// thread and buffers the count includes: allocations that grow with a
/// run's time on a loaded machine, not with its requests.
const NO_TOPOLOGY: &[u8] = b"-ERR unknown command 'CLUSTER', this test server tells no topology\r\n";

/// Answers every complete command with `answer` (a whole reply, e.g. a
/// `-MOVED …` line), `CLUSTER …` with an error, from buffers allocated once per connection.
pub fn answer_server(answer: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut input = vec![0u8; 1 << 20];
                let mut output = vec![0u8; 1 << 22];
                let mut len = 0;
                let mut scanner = ReplyScanner::new();
                loop {
                    let n = match stream.read(&mut input[len..]) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    len += n;
                    let (mut pos, mut out) = (0, 0);
                    while let Ok(Scan::Complete(end)) = scanner.scan(&input[..len], pos) {
                        let reply = if input[pos..end].starts_with(b"*2\r\n$7\r\nCLUSTER\r\n") {
                            NO_TOPOLOGY
                        } else {
                            &answer[..]
                        };
                        pos = end;
                        output[out..out + reply.len()].copy_from_slice(reply);
                        out += reply.len();
                    }
                    input.copy_within(pos..len, 0);
                    len -= pos;
                    if stream.write_all(&output[..out]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[allow(dead_code)]
pub fn allocations_for(plan: Plan) -> u64 {
    let control = RunControl::new();
    // One time-series interval for the whole run: each interval cut makes its
    // record (allocated, once a second), so a long run on a loaded machine
    // would count more cuts than a short one; that is per second, not per request.
    control.set_interval(std::time::Duration::from_secs(3600));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let r = run(plan.clone(), &control).unwrap();
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(r.failure, None);
    assert_eq!(r.counters.requests, plan.requests);
    after - before
}
