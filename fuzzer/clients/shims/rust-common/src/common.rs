//! What the Rust client shims share (rust-lapin, rust-amqprs, rust-fe2o3-amqp): their command
//! line, the JSON lines they print, the panic hook that makes any panic a crash, and the loop
//! over cases on a tokio runtime. amqpfuzz copies this file beside each shim's main.rs when it
//! builds one (fuzzer/clients/builds.py), which reads it as `mod common;`.

use serde_json::{json, Map, Value};
use std::future::Future;
use std::time::Duration;

/// The command line: `URL [--once] [--linger SECONDS]`, the URL before or after the options.
pub struct Args {
    pub url: String,
    pub once: bool,
    pub linger: Duration,
}

/// The first thing a shim's main does: a panic on any thread or task is a crash (its message
/// and a backtrace on stderr, then abort: tokio would catch a task's panic otherwise), and the
/// command line read (a wrong one: usage, status 2).
pub fn start(name: &str) -> Args {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic: {info}\n{}", std::backtrace::Backtrace::force_capture());
        std::process::abort();
    }));
    let mut url = None;
    let mut once = false;
    let mut linger = 10.0f64;
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--once" => once = true,
            "--linger" => {
                linger = argv.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage(name))
            }
            _ if url.is_none() && !arg.starts_with('-') => url = Some(arg),
            _ => usage(name),
        }
    }
    let url = url.unwrap_or_else(|| usage(name));
    Args { url, once, linger: Duration::from_secs_f64(linger) }
}

pub fn usage(name: &str) -> ! {
    eprintln!("usage: {name} URL [--once] [--linger SECONDS]");
    std::process::exit(2);
}

/// Cases 0, 1, ... (one with --once), each `run(case)`, on a runtime of two workers (a
/// library's I/O may block a worker for a while: a current-thread runtime would stall then).
pub fn cases<F, Fut>(once: bool, mut run: F)
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut case = 0u64;
        loop {
            run(case).await;
            if once {
                break;
            }
            case += 1;
        }
    });
}

/// One event: its name and case first, then `fields` (a JSON object).
pub fn emit(event: &str, case: u64, fields: Value) {
    let mut line = Map::new();
    line.insert("event".into(), json!(event));
    line.insert("case".into(), json!(case));
    if let Value::Object(more) = fields {
        line.extend(more);
    }
    println!("{}", Value::Object(line)); // stdout is line-buffered: one flush a line
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A float as a JSON number, or as text where JSON has none (NaN, the infinities).
pub fn float(f: f64) -> Value {
    if f.is_finite() {
        json!(f)
    } else {
        json!(f.to_string())
    }
}
