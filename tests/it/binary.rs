//! The gateway binary (or any command) as a child process of one test: its output collected, its
//! address read from its log, stopped by a signal, and killed with its process group if the test
//! ends first, so nothing is left running.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");
pub const EZGH_BIN: &str = env!("CARGO_BIN_EXE_ezgh");

/// A running child: its stdout and stderr so far, and its listen address once it logged one.
pub struct Running {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    /// Starts `command` in a process group of its own, with the gateway's text logs at info.
    pub fn spawn(mut command: Command) -> Self {
        command
            .env("RUST_LOG", "info")
            .env("SQSGW_LOG_FORMAT", "text")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Self {
            child,
            stdout,
            stderr,
        }
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The address of the gateway's "listening" log line, waiting up to `timeout` for it.
    pub fn address(&mut self, timeout: Duration) -> String {
        let line = self.wait_for(timeout, |out| {
            out.stderr
                .lines()
                .find(|line| line.contains("sqs-gateway listening"))
                .map(str::to_owned)
        });
        let at = line.find("address=").unwrap() + "address=".len();
        line[at..].split_whitespace().next().unwrap().to_owned()
    }

    /// Standard output up to and including the first line that starts with `prefix`.
    pub fn stdout_through(&mut self, prefix: &str, timeout: Duration) -> String {
        self.wait_for(timeout, |out| {
            let end = out
                .stdout
                .lines()
                .position(|line| line.starts_with(prefix))?;
            Some(
                out.stdout
                    .lines()
                    .take(end + 1)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
    }

    /// Waits until `found` answers from the output so far; panics with the output when the child
    /// exits first or `timeout` passes.
    fn wait_for<T>(&mut self, timeout: Duration, found: impl Fn(&Output) -> Option<T>) -> T {
        let until = Instant::now() + timeout;
        loop {
            let output = Output {
                stdout: self.stdout(),
                stderr: self.stderr(),
            };
            if let Some(value) = found(&output) {
                return value;
            }
            let exited = self.child.try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < until,
                "not seen (exit: {exited:?}); stdout:\n{}\nstderr:\n{}",
                output.stdout,
                output.stderr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` (a name such as `TERM` or `HUP`) to the child.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal}");
    }

    /// The exit status, or `None` when the child still runs after `timeout`.
    pub fn exit_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The readers finish with the pipes.
                std::thread::sleep(Duration::from_millis(100));
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // The whole group: `cargo run` may still be building with children of its own.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .status();
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A snapshot of a child's output.
struct Output {
    stdout: String,
    stderr: String,
}

fn collect(stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let into = Arc::clone(&text);
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut text = into.lock().unwrap();
            text.push_str(&line);
            text.push('\n');
        }
    });
    text
}

/// Runs the gateway binary with `args` and `env` until it exits (killed after 30 s: a command
/// that should have been refused and serves instead): its exit code (`None` when it was still
/// running) and its standard error.
pub fn run_to_exit(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(BIN);
    command.args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut running = Running::spawn(command);
    let status = running.exit_within(Duration::from_secs(30));
    (status.and_then(|status| status.code()), running.stderr())
}

/// The status of `GET /healthz` at `address`, or `None` when nothing answers (a synchronous call
/// for tests that drive processes).
pub fn healthz(address: &str) -> Option<reqwest::StatusCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let answer = http.get(format!("http://{address}/healthz")).send().await;
        answer.ok().map(|answer| answer.status())
    })
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
