//! The processes the bench measures: gateways and the ceiling, children of this same binary, so
//! each one's resident memory is its own and the client's load stays out of it.

use sqs_gateway::config::Config;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::credentials::api_keys;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The ezgh organization and project of every bench gateway.
pub(super) const ORGANIZATION: &str = "bench";
pub(super) const PROJECT: &str = "bench";
/// Gateway queues the ezgh and long-poll scenarios use (embedded gateways only).
pub(super) const EZGH_QUEUES: [&str; 3] = ["ezgh", "polls", "probe"];
/// The backlog's gateway queue (embedded gateways only).
pub(super) const BACKLOG_QUEUE: &str = "backlog";
/// The FIFO backlog's queue.
pub(super) const FIFO_BACKLOG_QUEUE: &str = "backlog.fifo";

/// The gateway queue the SQS endpoint's rows with `clients` clients use.
pub(super) fn sqs_queue(clients: usize) -> String {
    format!("sqs-{clients}")
}
/// Room for 10,000 waiting long polls plus the requests measured meanwhile.
pub(super) const MAX_CONNECTIONS: usize = 12_000;

/// What a gateway keeps its messages in.
#[derive(Debug, Clone)]
pub(super) enum GatewayBackend {
    /// The embedded engine, nothing on disk.
    InMemory,
    /// The embedded engine, nothing on disk, and the gateway's state in the Redis at this URL.
    InMemoryRedis(String),
    /// The embedded engine, durable in this directory.
    Durable(PathBuf),
    /// The sqs backend in front of `endpoint` (LocalStack), with these gateway queues (gateway
    /// name, LocalStack name), which must exist there.
    Sqs {
        endpoint: String,
        queues: Vec<(String, String)>,
        /// The state in the Redis at this URL (shared by gateways given the same one).
        redis: Option<String>,
        /// `backend.fan_in`: shared long polls and coalesced writes (the default, on).
        fan_in: bool,
    },
}

/// The credentials every bench gateway accepts (made fresh for each run).
pub(super) struct Secrets {
    /// The SQS endpoint's access key id and secret.
    pub sqs_key_id: String,
    pub sqs_secret: String,
    /// The ezgh API key (`Authorization: Bearer`), and its config entry.
    pub api_key: api_keys::GeneratedKey,
    receipt_key: String,
}

impl Secrets {
    pub(super) fn generate() -> Self {
        let secret: [u8; 24] = rand::random();
        Self {
            sqs_key_id: "AKIDSQSGATEWAYBENCH".into(),
            sqs_secret: hex::encode(secret),
            api_key: api_keys::generate_key(),
            receipt_key: Keyring::generate_key(),
        }
    }
}

/// A TOML basic string holding `text`.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// The config of a bench gateway: the backend, its queues, SQS credentials, and on the embedded
/// engine the ezgh queues and key. Queue management stays off, as by default: with it on, the
/// gateway would read (and sample) every queue the backend has, not only the bench's.
pub(super) fn gateway_config(
    listen: &str,
    backend: &GatewayBackend,
    secrets: &Secrets,
    work: &Path,
) -> String {
    let mut toml = format!(
        "[server]\nlisten = {}\nmax_connections = {MAX_CONNECTIONS}\n\n",
        toml_string(listen)
    );
    match backend {
        GatewayBackend::InMemory => {
            toml.push_str("[backend]\nkind = \"embedded\"\nin_memory = true\n\n");
        }
        // Sampled every second, so the store's call count is fresh when read after a row.
        GatewayBackend::InMemoryRedis(url) => toml.push_str(&format!(
            "[metrics]\nsample_seconds = 1\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[state.redis]\nurl = {}\n\n",
            toml_string(url)
        )),
        // Sampled every second, so the store's counts are fresh when read after a row.
        GatewayBackend::Durable(dir) => toml.push_str(&format!(
            "[metrics]\nsample_seconds = 1\n\n[backend]\nkind = \"embedded\"\ndata_dir = {}\n\n",
            toml_string(&dir.to_string_lossy())
        )),
        GatewayBackend::Sqs {
            endpoint,
            redis,
            fan_in,
            ..
        } => {
            toml.push_str(&format!(
                "[backend]\nkind = \"sqs\"\nendpoint_url = {}\nregion = \"us-east-1\"\nfan_in = {fan_in}\n\n",
                toml_string(endpoint)
            ));
            match redis {
                Some(url) => {
                    toml.push_str(&format!("[state.redis]\nurl = {}\n\n", toml_string(url)))
                }
                None => toml.push_str(&format!(
                    "[state]\ndir = {}\n\n",
                    toml_string(&work.join("state").to_string_lossy())
                )),
            }
        }
    }
    toml.push_str(&format!(
        "[[receipt_keys]]\nid = 1\nsecret = {}\n\n",
        toml_string(&secrets.receipt_key)
    ));
    toml.push_str(&format!(
        "[[sqs_api.credentials]]\naccess_key_id = {}\nsecret = {}\n\n",
        toml_string(&secrets.sqs_key_id),
        toml_string(&secrets.sqs_secret)
    ));
    toml.push_str(&format!(
        "[sombus]\ncredentials_dir = {}\n\n",
        toml_string(&work.join("sombus").to_string_lossy())
    ));
    // The ezgh queues the gateway has: all of them on the engine, those the sqs backend maps.
    let ezgh: Vec<&str> = match backend {
        GatewayBackend::Sqs { queues, .. } => EZGH_QUEUES
            .into_iter()
            .filter(|queue| queues.iter().any(|(name, _)| name == queue))
            .collect(),
        _ => EZGH_QUEUES.to_vec(),
    };
    toml.push_str(&format!("[ezgh.organizations.{ORGANIZATION}"));
    if !ezgh.is_empty() {
        let mapping: Vec<String> = ezgh
            .iter()
            .map(|queue| format!("{queue} = \"{queue}\""))
            .collect();
        toml.push_str(&format!(
            ".projects.{PROJECT}]\nqueues = {{ {} }}\n\n",
            mapping.join(", ")
        ));
    } else {
        toml.push_str("]\n\n");
    }
    toml.push_str(&format!(
        "[[api_keys]]\nid = {}\norganization = \"{ORGANIZATION}\"\nhash = {}\ngrants = {{ \"*\" = [\"*\"] }}\n",
        toml_string(&secrets.api_key.id),
        toml_string(&secrets.api_key.hash)
    ));
    match backend {
        GatewayBackend::Sqs { queues, .. } => {
            for (name, backend_name) in queues {
                toml.push_str(&format!(
                    "\n[queues.{}]\nsqs_queue = {}\n",
                    toml_string(name),
                    toml_string(backend_name)
                ));
            }
        }
        GatewayBackend::InMemory
        | GatewayBackend::InMemoryRedis(_)
        | GatewayBackend::Durable(_) => {
            let sqs = [sqs_queue(1), sqs_queue(8)];
            let names = EZGH_QUEUES
                .into_iter()
                .chain([BACKLOG_QUEUE, FIFO_BACKLOG_QUEUE])
                .chain(sqs.iter().map(String::as_str));
            for queue in names {
                toml.push_str(&format!("\n[queues.{}]\n", toml_string(queue)));
            }
        }
    }
    toml
}

/// A child process, killed (and reaped) when this is dropped: nothing outlives the bench.
pub(super) struct ChildGuard {
    child: Child,
    name: String,
    log: PathBuf,
}

impl ChildGuard {
    /// Its process id (for `/proc/<pid>/status`).
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error naming the child, with the end of its log.
    fn failure(&self, what: &str) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "{}: {what}; the end of its log:\n{}",
            self.name,
            tail.join("\n")
        )
    }

    /// Waits until the process ends; `Err` unless it succeeded. (Dropped meanwhile, the guard
    /// kills it.)
    pub(super) async fn finish(mut self) -> Result<(), String> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(self.failure(&format!("exited ({status})"))),
                Ok(None) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(error) => return Err(self.failure(&format!("cannot be waited for: {error}"))),
            }
        }
    }

    /// `Err` when the process has ended.
    fn check_running(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.failure(&format!("exited ({status})"))),
            Err(error) => Err(self.failure(&format!("cannot be waited for: {error}"))),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The running binary, as Linux shows it to the process itself.
const THIS_BINARY: &str = "/proc/self/exe";

/// Which binary a child runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Binary {
    /// This bench binary (its ceiling and fill commands).
    Bench,
    /// The gateway: `sqs-gateway`, beside this binary.
    Gateway,
    /// Another build's gateway (`--baseline-gateway`).
    GatewayAt(PathBuf),
}

impl Binary {
    fn path(self) -> Result<PathBuf, String> {
        let this = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        match self {
            // This very binary even if a build replaced the file meanwhile (Linux keeps the
            // old one reachable there); elsewhere, the file it was started from.
            Self::Bench if Path::new(THIS_BINARY).exists() => Ok(PathBuf::from(THIS_BINARY)),
            Self::Bench => Ok(this),
            Self::GatewayAt(path) if path.exists() => Ok(path),
            Self::GatewayAt(path) => Err(format!("{} does not exist", path.display())),
            Self::Gateway => {
                let gateway = this
                    .parent()
                    .map(|dir| dir.join("sqs-gateway"))
                    .filter(|path| path.exists())
                    .ok_or_else(|| {
                        format!(
                            "sqs-gateway is not beside {}: build both with `cargo build --release`",
                            this.display()
                        )
                    })?;
                Ok(gateway)
            }
        }
    }
}

/// Starts `binary` with `args`, output to `<work>/<name>.log`.
pub(crate) fn spawn(
    binary: Binary,
    name: &str,
    args: &[&str],
    work: &Path,
    env: &[(&str, &str)],
) -> Result<ChildGuard, String> {
    let exe = binary.path()?;
    let log = work.join(format!("{name}.log"));
    let file = std::fs::File::create(&log).map_err(|e| format!("cannot create {name}.log: {e}"))?;
    let stderr = file
        .try_clone()
        .map_err(|e| format!("cannot share {name}.log: {e}"))?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(stderr);
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    Ok(ChildGuard {
        child,
        name: name.to_owned(),
        log,
    })
}

/// A running gateway.
pub(super) struct Gateway {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// From the start of the process to the first 200 on `/readyz` (a reopen's duration).
    pub ready_after: Duration,
    guard: ChildGuard,
}

impl Gateway {
    /// Its `/metrics` page.
    pub(super) async fn scrape(&self) -> Result<String, String> {
        let fail = |e: reqwest::Error| format!("cannot read the gateway's metrics: {e}");
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(fail)?
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .map_err(fail)?
            .text()
            .await
            .map_err(fail)
    }

    /// Starts a gateway child and waits until `/readyz` answers 200 (at most `ready_timeout`).
    pub(super) async fn start(
        name: &str,
        backend: &GatewayBackend,
        secrets: &Secrets,
        work: &Path,
        ready_timeout: Duration,
    ) -> Result<Self, String> {
        Self::start_with(name, backend, secrets, work, ready_timeout, "").await
    }

    /// [`Gateway::start`] with `extra` tables added to the config.
    pub(super) async fn start_with(
        name: &str,
        backend: &GatewayBackend,
        secrets: &Secrets,
        work: &Path,
        ready_timeout: Duration,
        extra: &str,
    ) -> Result<Self, String> {
        Self::start_binary(
            Binary::Gateway,
            name,
            backend,
            secrets,
            work,
            ready_timeout,
            extra,
        )
        .await
    }

    /// [`Gateway::start_with`] from `binary` (this build's gateway, or another's).
    pub(super) async fn start_binary(
        binary: Binary,
        name: &str,
        backend: &GatewayBackend,
        secrets: &Secrets,
        work: &Path,
        ready_timeout: Duration,
        extra: &str,
    ) -> Result<Self, String> {
        let port = free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let text = gateway_config(&listen, backend, secrets, work) + extra;
        Config::parse(&text).map_err(|e| format!("{name}: the bench's config is refused: {e}"))?;
        let config = work.join(format!("{name}.toml"));
        write_private(&config, &text)?;
        let config = config.to_string_lossy().into_owned();
        let started = Instant::now();
        let mut guard = spawn(
            binary,
            name,
            &["serve", "--config", &config, "--listen", &listen],
            work,
            // The sqs backend's own credentials (LocalStack accepts any).
            &[
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ],
        )?;
        let base = format!("http://{listen}");
        wait_until_ok(&mut guard, &format!("{base}/readyz"), ready_timeout).await?;
        Ok(Self {
            base,
            ready_after: started.elapsed(),
            guard,
        })
    }

    /// Waits until the gateway's backend calls (but its metrics sampler's) stop for a second (a
    /// gateway reads its backend's queues in the background after it starts), at most `limit`;
    /// answers how long that took and how many backend calls it made meanwhile.
    pub(super) async fn settle(&self, limit: Duration) -> Result<(Duration, u64), String> {
        let calls = || async {
            let scrape = self.scrape().await.ok()?;
            // The metrics sampler's own reads (the queue list and each queue's depths) go on for
            // as long as it runs, every second on the durable gateway.
            let all = metric_sum(&scrape, "sqsgw_backend_calls_total").unwrap_or(0.0);
            let sampling: f64 = ["stats", "list_queues"]
                .into_iter()
                .filter_map(|call| {
                    metric_sum_where(&scrape, "sqsgw_backend_calls_total", &[("call", call)])
                })
                .sum();
            Some((all - sampling) as u64)
        };
        let started = Instant::now();
        let first = calls().await.unwrap_or(0);
        let (mut last, mut quiet_since) = (first, Instant::now());
        while started.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = calls().await.unwrap_or(last);
            if now != last {
                (last, quiet_since) = (now, Instant::now());
            } else if quiet_since.elapsed() >= Duration::from_secs(1) {
                break;
            }
        }
        Ok((
            quiet_since.saturating_duration_since(started),
            last.saturating_sub(first),
        ))
    }

    /// Resident memory of the gateway process now, in bytes.
    pub(super) fn resident_bytes(&self) -> Result<u64, String> {
        resident_bytes(self.guard.pid())
    }
}

/// The ceiling's process: a bare axum handler answering canned answers.
pub(super) struct Ceiling {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    _guard: ChildGuard,
}

impl Ceiling {
    /// Starts `sqs-gateway-bench bench-ceiling` answering the given receive and ack answers.
    pub(super) async fn start(
        work: &Path,
        receive_answer: &[u8],
        ack_answer: &[u8],
    ) -> Result<Self, String> {
        let receive = work.join("ceiling-receive.json");
        let ack = work.join("ceiling-ack.json");
        write_private(&receive, receive_answer)?;
        write_private(&ack, ack_answer)?;
        let listen = format!("127.0.0.1:{}", free_port()?);
        let mut guard = spawn(
            Binary::Bench,
            "ceiling",
            &[
                "bench-ceiling",
                "--listen",
                &listen,
                "--receive-answer",
                &receive.to_string_lossy(),
                "--ack-answer",
                &ack.to_string_lossy(),
            ],
            work,
            &[],
        )?;
        let base = format!("http://{listen}");
        wait_until_ok(
            &mut guard,
            &format!("{base}/ready"),
            Duration::from_secs(20),
        )
        .await?;
        Ok(Self {
            base,
            _guard: guard,
        })
    }
}

/// Writes a file only this user may read (configs hold secrets, answers hold handles).
fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), String> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(contents.as_ref())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Polls `url` every 10 ms until it answers 200, the child exits, or `timeout` passes.
async fn wait_until_ok(guard: &mut ChildGuard, url: &str, timeout: Duration) -> Result<(), String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + timeout;
    loop {
        guard.check_running()?;
        if let Ok(response) = http.get(url).send().await
            && response.status() == reqwest::StatusCode::OK
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(guard.failure(&format!("{url} did not answer 200 within {timeout:?}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A port nobody listens on now (the child binds it a moment later).
pub(super) fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Resident memory of process `pid`, in bytes (`VmRSS` of `/proc/<pid>/status`).
pub(super) fn resident_bytes(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    parse_vm_rss(&status).ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

/// The `VmRSS:   1234 kB` line of a `/proc/<pid>/status`, in bytes.
pub(super) fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let mut fields = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

/// The sum of a metric's samples (every label set) in a Prometheus text scrape; `None` when
/// it has none.
pub(super) fn metric_sum(scrape: &str, name: &str) -> Option<f64> {
    metric_sum_where(scrape, name, &[])
}

/// The sum of a metric's samples whose labels include every `labels` pair; `None` when it has
/// none.
pub(super) fn metric_sum_where(scrape: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let values: Vec<f64> = scrape
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            (rest.starts_with(' ') || rest.starts_with('{')).then_some(rest)
        })
        .filter(|rest| {
            labels
                .iter()
                .all(|(label, value)| rest.contains(&format!("{label}=\"{value}\"")))
        })
        .filter_map(|rest| rest.split_whitespace().last()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The `MemTotal:   1234 kB` line of `/proc/meminfo`, in bytes.
pub(super) fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    parse_vm_rss(&line.replacen("MemTotal:", "VmRSS:", 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status =
            "Name:\tsqs-gateway\nVmPeak:\t  900 kB\nVmRSS:\t   12345 kB\nRssAnon:\t 100 kB\n";
        assert_eq!(parse_vm_rss(status), Some(12345 * 1024));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None);
        assert_eq!(
            parse_mem_total("MemTotal:       24684000 kB\nMemFree: 1 kB\n"),
            Some(24_684_000 * 1024)
        );
    }

    #[test]
    fn metrics_are_read_from_a_scrape() {
        let scrape = "# HELP sqsgw_long_polls_waiting Long polls waiting.\n# TYPE sqsgw_long_polls_waiting gauge\nsqsgw_long_polls_waiting_total 3\nsqsgw_long_polls_waiting 9876\nsqsgw_backend_calls_total{operation=\"send\",outcome=\"ok\"} 12\nsqsgw_backend_calls_total{operation=\"receive\",outcome=\"ok\"} 30\n";
        assert_eq!(metric_sum(scrape, "sqsgw_long_polls_waiting"), Some(9876.0));
        assert_eq!(metric_sum(scrape, "sqsgw_backend_calls_total"), Some(42.0));
        assert_eq!(metric_sum(scrape, "missing"), None);
        let labelled = [("operation", "receive"), ("outcome", "ok")];
        assert_eq!(
            metric_sum_where(scrape, "sqsgw_backend_calls_total", &labelled),
            Some(30.0)
        );
        let absent = [("operation", "receive"), ("outcome", "error")];
        assert_eq!(
            metric_sum_where(scrape, "sqsgw_backend_calls_total", &absent),
            None
        );
    }

    #[test]
    fn this_process_has_resident_memory() {
        let bytes = resident_bytes(std::process::id()).expect("own status");
        assert!(bytes > 0);
    }

    #[test]
    fn every_bench_config_is_one_the_gateway_accepts() {
        let secrets = Secrets::generate();
        let work = Path::new("/tmp/bench work");
        for backend in [
            GatewayBackend::InMemory,
            GatewayBackend::Durable(work.join("data \"dir\"")),
            GatewayBackend::Sqs {
                endpoint: "http://127.0.0.1:4566".into(),
                queues: vec![(sqs_queue(1), "bench-1a2b-1".into())],
                redis: None,
                fan_in: true,
            },
        ] {
            let text = gateway_config("127.0.0.1:1234", &backend, &secrets, work);
            let config = Config::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(config.server.max_connections, MAX_CONNECTIONS);
            assert!(!config.sqs_api.manage_queues);
            let embedded = !matches!(backend, GatewayBackend::Sqs { .. });
            let queues: Vec<&str> = config.queues.keys().map(String::as_str).collect();
            if embedded {
                assert_eq!(
                    queues,
                    [
                        "backlog",
                        "backlog.fifo",
                        "ezgh",
                        "polls",
                        "probe",
                        "sqs-1",
                        "sqs-8"
                    ]
                );
            } else {
                assert_eq!(queues, ["sqs-1"]);
                assert_eq!(config.queue_locators()["sqs-1"], "bench-1a2b-1");
            }
        }
        // Replicas over LocalStack: the ezgh queue they map, the state in Redis.
        let replica = GatewayBackend::Sqs {
            endpoint: "http://127.0.0.1:4566".into(),
            queues: vec![("ezgh".into(), "bench-replicas-1a2b".into())],
            redis: Some("redis://127.0.0.1:6390/0".into()),
            fan_in: true,
        };
        let text = gateway_config("127.0.0.1:1234", &replica, &secrets, work);
        let config = Config::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(config.state.redis.is_some());
        assert!(config.api_keys().is_ok(), "{text}");
        assert!(text.contains("queues = { ezgh = \"ezgh\" }"), "{text}");
    }
}
