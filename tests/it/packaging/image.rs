//! The container image, checked without a container engine (CI has none): the Dockerfile,
//! .dockerignore and compose.yaml are parsed and held against the code, and the image's exact
//! command (its ENTRYPOINT, CMD and ENV) runs on the host, as in a fresh container.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::dockerfile::{Dockerfile, Stage, flag_value, healthcheck_url, shell_words, url_parts};
use super::dockerignore::DockerIgnore;
use super::{REPO, compose, repo_file};

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

/// Every file under `dir` (relative to the repository, `/`-separated).
fn files_under(relative: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![relative.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(Path::new(REPO).join(&dir)).expect("readable") {
            let entry = entry.expect("an entry");
            let path = format!("{dir}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().expect("a type").is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn the_build_context_holds_the_build_inputs_and_no_secrets() {
    let ignore = DockerIgnore::parse(&repo_file(".dockerignore"));
    for excluded in [
        "target",
        "target/release/sqs-gateway",
        ".git",
        // The default zero-config data directory: a receipt key and an SQS secret.
        "sqs-gateway-data/sqs-secret",
    ] {
        assert!(
            ignore.excludes(excluded),
            "{excluded} is in the build context"
        );
    }
    let mut needed = vec!["Cargo.toml".to_owned(), "Cargo.lock".to_owned()];
    needed.extend(files_under("src"));
    assert!(needed.iter().any(|file| file == "src/main.rs"));
    for file in &needed {
        assert!(
            !ignore.excludes(file),
            "{file} is left out of the build context"
        );
    }
}

#[test]
fn the_dockerfile_builds_with_cargo_locked_in_a_stage_of_its_own_from_files_in_the_context() {
    let dockerfile = Dockerfile::load();
    assert!(dockerfile.stages.len() >= 2, "a multi-stage build");
    let ignore = DockerIgnore::parse(&repo_file(".dockerignore"));

    // The binary comes from a build stage that runs cargo build --release --locked.
    let (builder, built, installed) = dockerfile.copied_binary();
    assert!(builder.base.starts_with("rust:"), "{}", builder.base);
    let build = builder
        .all("RUN")
        .find(|run| run.args.contains("cargo build"))
        .expect("the build stage runs cargo build");
    let words = shell_words(build.options().1);
    for flag in ["--release", "--locked"] {
        assert!(words.iter().any(|w| w == flag), "cargo build {flag}");
    }
    assert_eq!(
        flag_value(&words, "--bin").as_deref(),
        Some("sqs-gateway"),
        "cargo build --bin sqs-gateway"
    );
    assert!(
        build.args.contains(&built),
        "the build RUN puts the binary at {built}, which the runtime stage copies"
    );
    // jemalloc's sources are built with make, which the slim Rust images lack.
    if repo_file("Cargo.lock").contains("name = \"tikv-jemalloc-sys\"") {
        assert!(
            builder.all("RUN").any(|run| {
                let words = run.words();
                words.iter().any(|w| w == "install") && words.iter().any(|w| w == "make")
            }),
            "the build stage installs make for jemalloc"
        );
    }
    assert_eq!(
        dockerfile.command()[0],
        installed,
        "the ENTRYPOINT is the copied binary"
    );

    // Every COPY/ADD from the build context names files that exist and are not ignored.
    for stage in &dockerfile.stages {
        for copy in stage.all("COPY").chain(stage.all("ADD")) {
            if copy.options().0.contains_key("from") {
                continue;
            }
            let words = copy.words();
            let (_, sources) = words.split_last().expect("COPY SOURCE… DEST");
            assert!(!sources.is_empty(), "line {}: a source", copy.line);
            for source in sources {
                assert!(
                    !source.contains(['*', '?', '[']) && !source.contains("://"),
                    "line {}: plain paths only: {source}",
                    copy.line
                );
                assert!(
                    Path::new(REPO).join(source).exists(),
                    "line {}: {source} does not exist",
                    copy.line
                );
                assert!(
                    !ignore.excludes(source),
                    "line {}: {source} is excluded by .dockerignore",
                    copy.line
                );
            }
        }
    }

    // The runtime stage is slim and has the CA roots the sqs backend's HTTPS needs.
    let runtime = dockerfile.runtime();
    assert!(runtime.base.contains("slim"), "{}", runtime.base);
    assert!(
        runtime
            .all("RUN")
            .any(|run| run.args.contains("ca-certificates")),
        "the runtime stage installs ca-certificates"
    );

    // The build stage's files, copied as its COPYs say, form a package that builds the binary
    // with --locked: the lock file is current and every target's source is there.
    let staging = tempfile::tempdir().expect("a temp dir");
    let workdir = stage_build_context(builder, &ignore, staging.path());
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let tree = std::process::Command::new(cargo)
        .args([
            "tree",
            "--locked",
            "--offline",
            "--prefix",
            "none",
            "--depth",
            "0",
        ])
        .current_dir(&workdir)
        .output()
        .expect("cargo runs");
    assert!(
        tree.status.success(),
        "cargo --locked in the build stage's files: {}",
        String::from_utf8_lossy(&tree.stderr)
    );
    for (kind, path) in package_targets(&workdir) {
        assert!(
            Path::new(&path).exists(),
            "{kind} target {path} is missing from the build stage"
        );
    }
    let repo_targets: Vec<(String, String)> = package_targets(Path::new(REPO))
        .into_iter()
        .filter(|(kind, _)| ["lib", "bin", "custom-build"].contains(&kind.as_str()))
        .map(|(kind, path)| {
            let relative = Path::new(&path)
                .strip_prefix(REPO)
                .expect("inside the repository")
                .to_string_lossy()
                .into_owned();
            (kind, relative)
        })
        .collect();
    assert!(repo_targets.iter().any(|(kind, _)| kind == "bin"));
    for (kind, relative) in repo_targets {
        assert!(
            workdir.join(&relative).exists(),
            "the {kind} target {relative} is not copied into the build stage"
        );
    }
}

/// Copies what the stage's COPY instructions take from the context into `root` (as the image's
/// filesystem); returns the stage's WORKDIR there.
fn stage_build_context(stage: &Stage, ignore: &DockerIgnore, root: &Path) -> PathBuf {
    let mut workdir = PathBuf::from("/");
    for instruction in &stage.body {
        match instruction.keyword.as_str() {
            "WORKDIR" => workdir = workdir.join(&instruction.args),
            "COPY" | "ADD" if !instruction.options().0.contains_key("from") => {
                let words = instruction.words();
                let (dest, sources) = words.split_last().expect("COPY SOURCE… DEST");
                let into_dir = dest.ends_with('/') || dest == "." || sources.len() > 1;
                let dest = root.join(workdir.join(dest).strip_prefix("/").expect("absolute"));
                for source in sources {
                    let from = Path::new(REPO).join(source);
                    if from.is_dir() {
                        // A directory's contents (what .dockerignore leaves) go into DEST.
                        let prefix = format!("{}/", source.trim_end_matches('/'));
                        for file in files_under(source.trim_end_matches('/')) {
                            if ignore.excludes(&file) {
                                continue;
                            }
                            let target = dest.join(file.strip_prefix(&prefix).expect("under"));
                            copy_file(&Path::new(REPO).join(&file), &target);
                        }
                    } else if into_dir {
                        copy_file(&from, &dest.join(from.file_name().expect("a file name")));
                    } else {
                        copy_file(&from, &dest);
                    }
                }
            }
            _ => {}
        }
    }
    root.join(workdir.strip_prefix("/").expect("absolute"))
}

fn copy_file(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
    std::fs::copy(from, to).unwrap_or_else(|error| panic!("{}: {error}", from.display()));
}

/// (kind, source path) of each target of the package in `dir`.
fn package_targets(dir: &Path) -> Vec<(String, String)> {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo metadata in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let package = metadata["packages"]
        .as_array()
        .and_then(|packages| {
            packages
                .iter()
                .find(|package| package["name"] == "sqs-gateway")
        })
        .expect("the sqs-gateway package");
    package["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .flat_map(|target| {
            let path = target["src_path"].as_str().expect("src_path").to_owned();
            target["kind"]
                .as_array()
                .expect("kinds")
                .iter()
                .map(move |kind| (kind.as_str().expect("a kind").to_owned(), path.clone()))
        })
        .collect()
}

#[test]
fn the_image_runs_the_zero_config_gateway_on_all_interfaces_as_a_user_with_a_volume() {
    let dockerfile = Dockerfile::load();
    let command = dockerfile.command();
    let env = dockerfile.env();
    let (_, _, installed) = dockerfile.copied_binary();

    // The gateway's zero-config start, its data directory the volume.
    assert_eq!(command[0], installed);
    assert_eq!(command.get(1).map(String::as_str), Some("serve"));
    assert!(
        flag_value(&command, "--config").is_none() && !env.contains_key("SQSGW_CONFIG"),
        "the image's default command is the zero-config start"
    );
    let volume = dockerfile.volume();
    assert_eq!(volume, "/data");
    let data_dir =
        flag_value(&command, "--data-dir").or_else(|| env.get("SQSGW_DATA_DIR").cloned());
    assert_eq!(
        data_dir.as_deref(),
        Some(volume.as_str()),
        "the data dir is the volume"
    );

    // It listens on all interfaces, on the exposed port.
    let listen = flag_value(&command, "--listen")
        .or_else(|| env.get("SQSGW_LISTEN").cloned())
        .expect("the image sets the listen address (the generated config's is 127.0.0.1)");
    let listen: SocketAddr = listen.parse().expect("a socket address");
    assert!(
        listen.ip().is_unspecified(),
        "listens on all interfaces: {listen}"
    );
    assert_eq!(
        listen.port(),
        dockerfile.exposed_port(),
        "EXPOSE = listen port"
    );

    // The health check probes the listen port with the binary itself (the image has no curl).
    let healthcheck = dockerfile.healthcheck();
    assert_eq!(healthcheck[0], installed);
    assert_eq!(healthcheck.get(1).map(String::as_str), Some("probe"));
    let (host, port, path) = url_parts(&healthcheck_url(&healthcheck));
    assert!(host == "127.0.0.1" || host == "localhost", "{host}");
    assert_eq!(port, listen.port(), "the health check's port");
    assert_eq!(path, "/healthz");

    // An unprivileged user (by number: runAsNonRoot can check it) that owns the volume.
    let runtime = dockerfile.runtime();
    let user = runtime.last("USER").expect("USER").args.clone();
    let uid = user.split(':').next().unwrap_or_default();
    assert!(
        !uid.is_empty() && uid != "root" && uid != "0",
        "USER {user}"
    );
    assert!(
        runtime.all("RUN").any(|run| {
            let words = shell_words(&run.args);
            words
                .windows(3)
                .any(|w| w[0] == "chown" && w[1].split(':').next() == Some(uid) && w[2] == volume)
        }),
        "a RUN gives {volume} to user {uid} (chown {uid}:… {volume})"
    );
    let stop = runtime.last("STOPSIGNAL").expect("STOPSIGNAL");
    assert_eq!(stop.args, "SIGTERM");
}

// ---------------------------------------------------------------------------------------------
// The image's command, on the host.

/// A port free right now. The image's port (8787) may be taken on this machine (a developer's
/// gateway, another test), so the command runs on this one instead.
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// An address of this machine other than loopback, if it has one: the interface a packet to a
/// documentation address would leave by (connecting a UDP socket sends nothing).
fn non_loopback_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The image's view of a value, translated to this host: the binary, the volume, the port.
struct OnHost {
    binary: String,
    volume: String,
    data_dir: PathBuf,
    image_port: u16,
    port: u16,
}

impl OnHost {
    fn translate(&self, value: &str) -> String {
        if value == self.binary {
            return BIN.to_owned();
        }
        if let Some(rest) = value.strip_prefix(&self.volume)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("{}{rest}", self.data_dir.display());
        }
        if let Ok(mut address) = value.parse::<SocketAddr>()
            && address.port() == self.image_port
        {
            address.set_port(self.port);
            return address.to_string();
        }
        if value.starts_with("http://") {
            return value.replace(
                &format!(":{}/", self.image_port),
                &format!(":{}/", self.port),
            );
        }
        value.to_owned()
    }
}

#[tokio::test]
async fn the_image_command_starts_with_zero_config_on_all_interfaces_and_stops_on_sigterm() {
    let dockerfile = Dockerfile::load();
    let scratch = tempfile::tempdir().expect("a temp dir");
    // Like a fresh volume: the directory does not exist yet.
    let data_dir = scratch.path().join("data");
    let on_host = OnHost {
        binary: dockerfile.copied_binary().2,
        volume: dockerfile.volume(),
        data_dir: data_dir.clone(),
        image_port: dockerfile.exposed_port(),
        port: free_port(),
    };
    let port = on_host.port;
    let command: Vec<String> = dockerfile
        .command()
        .iter()
        .map(|arg| on_host.translate(arg))
        .collect();
    // Only the image's ENV: nothing of this host's environment (SQSGW_*, proxies) leaks in.
    let env: BTreeMap<String, String> = dockerfile
        .env()
        .into_iter()
        .map(|(key, value)| (key, on_host.translate(&value)))
        .collect();
    assert!(!data_dir.exists());
    // Never let a changed Dockerfile make this run write outside the temp dir.
    let host_data_dir =
        flag_value(&command, "--data-dir").or_else(|| env.get("SQSGW_DATA_DIR").cloned());
    assert_eq!(
        host_data_dir.map(PathBuf::from),
        Some(data_dir.clone()),
        "the image's data dir is its volume"
    );

    let mut gateway = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env_clear()
        .envs(&env)
        .current_dir(scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = gateway.stdout.take().expect("stdout");
    let stderr = gateway.stderr.take().expect("stderr");
    for (stream, output) in [
        (
            "stdout",
            Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
        ),
        ("stderr", Box::new(stderr)),
    ] {
        let lines_tx = lines_tx.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(output).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let _ = lines_tx.send(format!("{stream}: {line}"));
            }
        });
    }
    drop(lines_tx);

    // It listens on 0.0.0.0 (all interfaces) at the port, as its log says.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let listening = loop {
        let line = tokio::time::timeout_at(deadline.into(), lines.recv())
            .await
            .unwrap_or_else(|_| panic!("no listening line within 30 s: {seen:#?}"))
            .unwrap_or_else(|| panic!("the gateway exited before listening: {seen:#?}"));
        seen.push(line.clone());
        if line.contains("sqs-gateway listening") {
            break line;
        }
    };
    assert!(
        listening.contains(&format!("0.0.0.0:{port}")),
        "listens on all interfaces: {listening}"
    );

    // The zero-config start made its config in the fresh data directory.
    let config_path = data_dir.join(sqs_gateway::setup::CONFIG_FILE);
    let config: toml::Value =
        toml::from_str(&std::fs::read_to_string(&config_path).expect("the generated config"))
            .expect("TOML");
    assert_eq!(config["backend"]["kind"].as_str(), Some("embedded"));

    // Reachable from outside loopback, as through a published port (else 0.0.0.0 above must do).
    let host = non_loopback_address().unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client");
    let healthcheck = dockerfile.healthcheck();
    let (_, _, health_path) = url_parts(&healthcheck_url(&healthcheck));
    for path in ["/healthz", "/readyz", health_path.as_str()] {
        let url = format!("http://{}{path}", SocketAddr::new(host, port));
        let response = http.get(&url).send().await.expect(&url);
        assert_eq!(response.status(), reqwest::StatusCode::OK, "{url}");
    }
    drop(http);

    // The HEALTHCHECK, run as the image would: healthy. Pointed at a missing route: not.
    let healthcheck: Vec<String> = healthcheck
        .iter()
        .map(|arg| on_host.translate(arg))
        .collect();
    let probe = |argv: Vec<String>| {
        let env = env.clone();
        async move {
            tokio::process::Command::new(&argv[0])
                .args(&argv[1..])
                .env_clear()
                .envs(&env)
                .output()
                .await
                .expect("the probe runs")
        }
    };
    let healthy = probe(healthcheck.clone()).await;
    assert_eq!(
        healthy.status.code(),
        Some(0),
        "{healthcheck:?}: {}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    let url = healthcheck_url(&healthcheck);
    let missing: Vec<String> = healthcheck
        .iter()
        .map(|arg| {
            if *arg == url {
                arg.replace("/healthz", "/no-such-route")
            } else {
                arg.clone()
            }
        })
        .collect();
    assert_ne!(missing, healthcheck);
    assert_eq!(probe(missing).await.status.code(), Some(1));

    // SIGTERM (the STOPSIGNAL) stops it cleanly and promptly.
    let pid = gateway.id().expect("running").to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), gateway.wait())
        .await
        .expect("stopped within 10 s of SIGTERM")
        .expect("an exit status");
    while let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(1), lines.recv()).await {
        seen.push(line);
    }
    assert_eq!(status.code(), Some(0), "{seen:#?}");
}

#[test]
fn probe_fails_when_nothing_listens() {
    let port = free_port();
    let output = std::process::Command::new(BIN)
        .args([
            "probe",
            "--url",
            &format!("http://127.0.0.1:{port}/healthz"),
        ])
        .output()
        .expect("the probe runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("probe failed"), "{stderr}");
}

#[test]
fn compose_runs_the_image_embedded_and_in_front_of_localstack() {
    let dockerfile = Dockerfile::load();
    let exposed = dockerfile.exposed_port();
    let services = compose::named_services();
    let gateways: Vec<&(String, serde_norway::Value)> = services
        .iter()
        .filter(|(_, service)| service.get("build").is_some())
        .collect();
    for (name, block) in &gateways {
        let build = &block["build"];
        assert_eq!(
            compose::string(build, "context").as_deref(),
            Some("."),
            "{name}"
        );
        assert_eq!(
            compose::string(build, "dockerfile").as_deref(),
            Some("Dockerfile"),
            "{name}"
        );
        for mapping in compose::list(block, "ports") {
            let container_port = mapping.rsplit(':').next().unwrap_or_default();
            assert_eq!(container_port, exposed.to_string(), "{name}: {mapping}");
        }
    }
    for (name, block) in &services {
        for volume in compose::list(block, "volumes") {
            if let Some(host_path) = volume.strip_prefix("./") {
                let host_path = host_path.split(':').next().unwrap_or_default();
                assert!(
                    Path::new(REPO).join(host_path).is_file(),
                    "{name} mounts ./{host_path}, which is not in the repository"
                );
            }
        }
    }

    // The embedded one: the image's own command, its data in a volume at /data.
    let (embedded, block) = gateways
        .iter()
        .find(|(_, block)| compose::list(block, "command").is_empty())
        .expect("a gateway service running the image's command (embedded backend)");
    let volume = dockerfile.volume();
    assert!(
        compose::list(block, "volumes")
            .iter()
            .any(|mount| mount.ends_with(&format!(":{volume}"))),
        "{embedded} keeps {volume} in a volume"
    );

    // The sqs backend: a mounted config that is valid and reaches the LocalStack service.
    let (over_localstack, block) = gateways
        .iter()
        .find(|(_, block)| flag_value(&compose::list(block, "command"), "--config").is_some())
        .expect("a gateway service with a config of its own (sqs backend)");
    let command = compose::list(block, "command");
    let config_in_container = flag_value(&command, "--config").expect("--config");
    let mount = compose::list(block, "volumes")
        .into_iter()
        .find(|mount| mount.split(':').nth(1) == Some(config_in_container.as_str()))
        .unwrap_or_else(|| panic!("{over_localstack} mounts {config_in_container}"));
    let config_file = mount
        .split(':')
        .next()
        .and_then(|host| host.strip_prefix("./"))
        .expect("a repository file")
        .to_owned();
    let checked = std::process::Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(Path::new(REPO).join(&config_file))
        .output()
        .expect("check-config runs");
    assert!(
        checked.status.success(),
        "{config_file}: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let config: toml::Value = toml::from_str(&repo_file(&config_file)).expect("TOML");
    assert_eq!(config["backend"]["kind"].as_str(), Some("sqs"));
    let endpoint = config["backend"]["endpoint_url"]
        .as_str()
        .expect("endpoint_url");
    let (_, localstack) = services
        .iter()
        .find(|(name, _)| name == "localstack")
        .expect("a localstack service");
    assert!(
        endpoint.starts_with("http://localstack:"),
        "{config_file} reaches the localstack service: {endpoint}"
    );
    assert!(
        compose::depends_on(block)
            .iter()
            .any(|name| name == "localstack"),
        "{over_localstack} depends on localstack"
    );

    // LocalStack: a pinned official image whose ready hook creates the config's queues.
    let image = compose::string(localstack, "image").expect("image");
    let tag = image
        .strip_prefix("localstack/localstack:")
        .expect("the official image");
    assert!(!tag.is_empty() && tag != "latest", "a pinned tag: {image}");
    let hook = compose::list(localstack, "volumes")
        .into_iter()
        .find(|mount| {
            mount
                .split(':')
                .nth(1)
                .is_some_and(|path| path.starts_with("/etc/localstack/init/ready.d/"))
        })
        .expect("a ready hook");
    let hook_text = repo_file(
        hook.trim_start_matches("./")
            .split(':')
            .next()
            .unwrap_or_default(),
    );
    for (name, queue) in config["queues"].as_table().expect("queues") {
        let sqs_name = queue
            .get("sqs_queue")
            .and_then(toml::Value::as_str)
            .unwrap_or(name);
        assert!(
            hook_text.contains(&format!("\"{sqs_name}\"")),
            "the ready hook creates {sqs_name}"
        );
    }
}
