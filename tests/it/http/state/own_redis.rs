//! Redis servers of a test's own (one node, or a three-node cluster) on ports of their own, that
//! the test can take away and bring back; killed when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A store a test takes away and brings back, and the `[state.redis]` that reaches it.
pub trait OwnStore {
    /// `[state.redis]` up to its last line (more settings may follow).
    fn config(&self) -> String;
    /// Waits until every node answers.
    async fn wait_until_answering(&self);
    /// Kills every node.
    fn take_away(&mut self);
    /// Starts every node again, empty (a cluster keeps its shape).
    fn bring_back(&mut self);
}

/// One redis-server.
pub struct OwnRedis {
    port: u16,
    child: Child,
}

impl OwnRedis {
    pub fn start(port: u16) -> Self {
        Self {
            port,
            child: redis_server(port, &[]),
        }
    }

    pub fn free_port() -> u16 {
        crate::binary::free_port()
    }

    pub async fn wait_until_answering(&self) {
        wait_for(self.port).await;
    }

    pub fn stop(mut self) {
        self.take_away();
    }

    /// Stops the server without closing a connection (SIGSTOP): commands sent meanwhile wait in
    /// its socket and run once it goes on, as after a long pause of the server or its network.
    pub fn stall(&self) {
        self.signal("-STOP");
    }

    /// Lets a stalled server go on (SIGCONT).
    pub fn go_on(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill {signal}");
    }
}

impl OwnStore for OwnRedis {
    fn config(&self) -> String {
        format!(
            "[state.redis]\nurl = \"redis://127.0.0.1:{}/0\"\n",
            self.port
        )
    }

    async fn wait_until_answering(&self) {
        wait_for(self.port).await;
    }

    fn take_away(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn bring_back(&mut self) {
        self.child = redis_server(self.port, &[]);
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.take_away();
    }
}

/// Three cluster nodes, the slots split between them, no replicas.
pub struct OwnCluster {
    ports: Vec<u16>,
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl OwnCluster {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ports = cluster_ports(3);
        let mut cluster = Self {
            ports,
            dir,
            children: Vec::new(),
        };
        cluster.bring_back();
        for port in &cluster.ports {
            wait_for(*port).await;
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli runs (redis/start.sh installs it)");
        assert!(created.success(), "redis-cli --cluster create");
        cluster
    }

    fn node_args(dir: &Path, port: u16) -> Vec<String> {
        let dir = dir.join(port.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        [
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            "2000",
            "--cluster-config-file",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain([
            dir.join("nodes.conf").display().to_string(),
            "--dir".to_owned(),
            dir.display().to_string(),
        ])
        .collect()
    }
}

impl OwnStore for OwnCluster {
    fn config(&self) -> String {
        let nodes: Vec<String> = self.ports[1..]
            .iter()
            .map(|port| format!("\"redis://127.0.0.1:{port}\""))
            .collect();
        format!(
            "[state.redis]\nurl = \"redis://127.0.0.1:{}\"\ncluster = true\nnodes = [{}]\n",
            self.ports[0],
            nodes.join(", ")
        )
    }

    /// Until the cluster says it is whole (every slot served).
    async fn wait_until_answering(&self) {
        for _ in 0..200 {
            let info = Command::new("redis-cli")
                .args(["-p", &self.ports[0].to_string(), "cluster", "info"])
                .output()
                .expect("redis-cli runs");
            if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the cluster on {:?} did not come up", self.ports);
    }

    fn take_away(&mut self) {
        for mut child in self.children.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn bring_back(&mut self) {
        self.children = self
            .ports
            .iter()
            .map(|port| {
                let args = Self::node_args(self.dir.path(), *port);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                redis_server(*port, &args)
            })
            .collect();
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        self.take_away();
    }
}

/// A redis-server on `port`, without persistence, with `more` arguments.
fn redis_server(port: u16, more: &[&str]) -> Child {
    Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .args(more)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server runs (redis/start.sh installs it)")
}

/// `count` ports free now whose cluster bus ports (the port + 10,000) are free too.
fn cluster_ports(count: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    while ports.len() < count {
        let port: u16 = rand::random_range(20_000..40_000);
        let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
        if !ports.contains(&port) && free(port) && free(port + 10_000) {
            ports.push(port);
        }
    }
    ports
}

async fn wait_for(port: u16) {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on {port} did not start");
}
