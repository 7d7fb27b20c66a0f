//! A tiny RESP server for the engine's loop tests: SET and GET over a shared
//! map, plus the misbehaviours the engine must report (closing, stalling,
//! garbage). Blocking std sockets, a thread per connection: simple beats fast here.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub type Store = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// SET and GET as Redis does; anything else is an error reply.
    Normal,
    /// Closes each connection after this many replies.
    CloseAfter(usize),
    /// Reads requests and never answers.
    Stall,
    /// Answers the first request with bytes that are not RESP.
    Garbage,
    /// Acknowledges every SET and stores nothing.
    Forgetful,
    /// Greets each connection with `+OK` before any request, then as Normal.
    Greeting,
    /// As Normal, with a RESP3 push frame on accept and before every reply.
    Pushes,
    /// As Normal, each reply in a write of its own: a pipeline's replies
    /// reach the client in pieces.
    OneByOne,
}

pub struct TestServer {
    pub port: u16,
    pub store: Store,
    /// The keys each connection SET, in the order they came (a connection's index: its accept order).
    pub set_keys: SetKeys,
}

pub type SetKeys = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

impl TestServer {
    pub fn start(behaviour: Behaviour) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let store: Store = Arc::default();
        let set_keys: SetKeys = Arc::default();
        let (shared, keys) = (Arc::clone(&store), Arc::clone(&set_keys));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let store = Arc::clone(&shared);
                let log = {
                    let mut all = keys.lock().unwrap();
                    all.push(Vec::new());
                    (Arc::clone(&keys), all.len() - 1)
                };
                std::thread::spawn(move || serve(stream, store, log, behaviour));
            }
        });
        TestServer { port, store, set_keys }
    }
}

fn read_command(reader: &mut BufReader<TcpStream>) -> Option<Vec<Vec<u8>>> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let argc: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(argc);
    for _ in 0..argc {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut arg = vec![0u8; len + 2];
        reader.read_exact(&mut arg).ok()?;
        arg.truncate(len);
        args.push(arg);
    }
    Some(args)
}

const PUSH: &[u8] = b">2\r\n$7\r\nmessage\r\n$3\r\nhi!\r\n";

fn serve(stream: TcpStream, store: Store, (log, conn): (SetKeys, usize), behaviour: Behaviour) {
    let mut writer = BufWriter::new(stream.try_clone().unwrap());
    let mut reader = BufReader::new(stream);
    let mut replies = 0;
    let hello: &[u8] = match behaviour {
        Behaviour::Greeting => b"+OK\r\n",
        Behaviour::Pushes => PUSH,
        _ => b"",
    };
    if !hello.is_empty() && (writer.write_all(hello).is_err() || writer.flush().is_err()) {
        return;
    }
    while let Some(args) = read_command(&mut reader) {
        match behaviour {
            Behaviour::Stall => continue,
            Behaviour::Garbage => {
                let _ = writer.write_all(b"?not resp\r\n");
                let _ = writer.flush();
                continue;
            }
            Behaviour::CloseAfter(n) if replies == n => {
                // FIN, not RST: shut down our side, then drain until the client goes.
                let _ = writer.flush();
                let _ = reader.get_ref().shutdown(std::net::Shutdown::Write);
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
                return;
            }
            _ => {}
        }
        let name = String::from_utf8_lossy(&args[0]).to_uppercase();
        let reply = match (name.as_str(), args.len()) {
            ("SET", 3) => {
                log.lock().unwrap()[conn].push(args[1].clone());
                if !matches!(behaviour, Behaviour::Forgetful) {
                    store.lock().unwrap().insert(args[1].clone(), args[2].clone());
                }
                b"+OK\r\n".to_vec()
            }
            ("GET", 2) => match store.lock().unwrap().get(&args[1]) {
                Some(v) => [format!("${}\r\n", v.len()).as_bytes(), v, b"\r\n"].concat(),
                None => b"$-1\r\n".to_vec(),
            },
            _ => format!("-ERR unknown command '{name}'\r\n").into_bytes(),
        };
        replies += 1;
        if matches!(behaviour, Behaviour::Pushes) && writer.write_all(PUSH).is_err() {
            return;
        }
        if writer.write_all(&reply).is_err() {
            return;
        }
        // Answer a pipeline in one write, as a real server does.
        let one_by_one = matches!(behaviour, Behaviour::OneByOne);
        if (one_by_one || reader.buffer().is_empty()) && writer.flush().is_err() {
            return;
        }
    }
}
