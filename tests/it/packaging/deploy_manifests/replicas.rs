//! compose.yaml's replicated set, deploy/replicas.toml and deploy/nginx-replicas.conf held against
//! the code: three replicas over LocalStack and Valkey keeping sombus credentials on the shared
//! server, stopping only after the drain and a long poll, and nginx round-robining over them with a
//! read timeout beyond a long poll.

use super::support::*;
use crate::packaging::repo_file;
use serde_norway::Value;
use sqs_gateway::config::Config;
use std::collections::BTreeSet;
use std::time::Duration;

/// A replica's config file: the host file mounted where `--config` points.
fn replica_config_mount(name: &str, service: &Value) -> (String, Vec<String>) {
    let command = words(&service["command"], "command");
    let path = command
        .iter()
        .position(|word| word == "--config")
        .and_then(|at| command.get(at + 1))
        .unwrap_or_else(|| panic!("{name}: serve --config FILE"));
    let mount = words(&service["volumes"], "volumes")
        .into_iter()
        .find(|mount| mount.split(':').nth(1) == Some(path.as_str()))
        .unwrap_or_else(|| panic!("{name} mounts {path}"));
    let parts: Vec<String> = mount.split(':').map(str::to_owned).collect();
    (parts[0].clone(), parts)
}

fn parsed_replicas_toml() -> Config {
    Config::parse(&repo_file(REPLICAS_TOML))
        .unwrap_or_else(|error| panic!("{REPLICAS_TOML}: {error}"))
}

#[test]
fn compose_runs_three_replicas_of_deploy_replicas_toml_over_localstack_and_valkey() {
    let services = crate::packaging::compose::services();
    let replicas = compose_replicas();
    let names: Vec<&str> = replicas.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["replica-1", "replica-2", "replica-3"]);
    let localstack_gateway = &services["gateway-localstack"];
    let image = image();
    for (name, service) in &replicas {
        assert_eq!(
            service["image"].as_str(),
            Some("sqs-gateway:local"),
            "{name}"
        );
        let command = words(&service["command"], "command");
        assert_eq!(command.first().map(String::as_str), Some("serve"), "{name}");
        let (host_file, parts) = replica_config_mount(name, service);
        assert_eq!(
            host_file,
            format!("./{REPLICAS_TOML}"),
            "{name} runs {REPLICAS_TOML}"
        );
        assert_eq!(
            parts.get(2).map(String::as_str),
            Some("ro"),
            "{name} mounts it read-only"
        );
        assert_eq!(
            strings(&service["environment"], "environment"),
            strings(&localstack_gateway["environment"], "environment"),
            "{name}: the AWS environment of gateway-localstack"
        );
        for dependency in ["localstack", "valkey"] {
            assert_eq!(
                service["depends_on"][dependency]["condition"].as_str(),
                Some("service_healthy"),
                "{name} waits for {dependency} to be healthy"
            );
        }
        let health = words(&service["healthcheck"]["test"], "healthcheck.test").join(" ");
        assert!(
            health.contains(&format!("http://127.0.0.1:{}/", image.port)),
            "{name}'s health check asks the listening port: {health}"
        );
    }
    let valkey = &services["valkey"];
    assert_eq!(valkey["image"].as_str(), Some("valkey/valkey:8"));
    let health = words(&valkey["healthcheck"]["test"], "valkey healthcheck").join(" ");
    assert!(health.contains("valkey-cli ping"), "{health}");

    let config = parsed_replicas_toml();
    let redis = config.state.redis.as_ref().expect("[state.redis] is set");
    let url = url::Url::parse(&redis.url).unwrap();
    let host = url.host_str().unwrap();
    assert!(
        services.contains_key(host),
        "{} names a compose service",
        redis.url
    );
    assert_eq!(host, "valkey");
}

#[test]
fn the_compose_replicas_keep_sombus_credentials_on_the_shared_server() {
    let config = parsed_replicas_toml();
    assert!(config.state.redis.is_some());
    assert!(
        config.sombus.credentials_dir.is_none(),
        "no directory to share: the connections are in Valkey"
    );
}

#[test]
fn deploy_replicas_toml_is_deploy_localstack_toml_plus_the_shared_state() {
    let replicas: toml::Value = toml::from_str(&repo_file(REPLICAS_TOML)).unwrap();
    let single: toml::Value = toml::from_str(&repo_file("deploy/localstack.toml")).unwrap();
    for section in ["backend", "queues", "receipt_keys", "api_keys", "ezgh"] {
        assert_eq!(
            replicas.get(section),
            single.get(section),
            "{REPLICAS_TOML}'s {section} is deploy/localstack.toml's"
        );
    }
    assert!(parsed_replicas_toml().state.redis.is_some());
}

#[test]
fn compose_stops_each_replica_only_after_the_drain_and_a_long_poll() {
    let config = parsed_replicas_toml();
    for (name, service) in compose_replicas() {
        let grace = duration(text(&service["stop_grace_period"], "stop_grace_period"));
        let needed = Duration::from_secs(config.server.shutdown_grace_seconds) + LONGEST_LONG_POLL;
        assert!(
            grace > needed,
            "{name}: stop_grace_period {grace:?} must exceed {needed:?}"
        );
    }
}

/// deploy/nginx-replicas.conf as directives: `name args…` per statement, blocks flattened, each
/// with the names of the blocks around it.
fn nginx_directives() -> Vec<(Vec<String>, String, Vec<String>)> {
    let text: String = repo_file(NGINX_CONF)
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut directives = Vec::new();
    let mut blocks: Vec<String> = Vec::new();
    let mut statement = String::new();
    for character in text.chars() {
        match character {
            '{' => {
                blocks.push(statement.split_whitespace().collect::<Vec<_>>().join(" "));
                statement.clear();
            }
            '}' => {
                blocks.pop().expect("balanced braces");
                statement.clear();
            }
            ';' => {
                let mut words = statement.split_whitespace().map(str::to_owned);
                if let Some(name) = words.next() {
                    directives.push((blocks.clone(), name, words.collect()));
                }
                statement.clear();
            }
            other => statement.push(other),
        }
    }
    assert!(blocks.is_empty(), "{NGINX_CONF}: balanced braces");
    directives
}

#[test]
fn nginx_round_robins_over_the_three_replicas_with_a_read_timeout_beyond_a_long_poll() {
    let directives = nginx_directives();
    let image = image();
    let upstreams: BTreeSet<String> = directives
        .iter()
        .filter_map(|(blocks, _, _)| blocks.first())
        .filter_map(|block| block.strip_prefix("upstream ").map(str::to_owned))
        .collect();
    assert_eq!(upstreams.len(), 1, "one upstream: {upstreams:?}");
    let upstream = upstreams.into_iter().next().unwrap();
    let inside = |blocks: &[String]| blocks.first() == Some(&format!("upstream {upstream}"));
    let servers: BTreeSet<String> = directives
        .iter()
        .filter(|(blocks, name, _)| inside(blocks) && name == "server")
        .map(|(_, _, args)| args[0].clone())
        .collect();
    let expected: BTreeSet<String> = compose_replicas()
        .into_iter()
        .map(|(name, _)| format!("{name}:{}", image.port))
        .collect();
    assert_eq!(
        servers, expected,
        "the upstream is the three replicas on their listening port"
    );
    for balancing in ["least_conn", "ip_hash", "hash", "random", "sticky"] {
        assert!(
            !directives
                .iter()
                .any(|(blocks, name, _)| inside(blocks) && name == balancing),
            "round robin, not {balancing}"
        );
    }

    let directive = |wanted: &str| -> Vec<String> {
        directives
            .iter()
            .find(|(_, name, _)| name == wanted)
            .map(|(_, _, args)| args.clone())
            .unwrap_or_else(|| panic!("{NGINX_CONF}: {wanted}"))
    };
    assert_eq!(directive("proxy_pass"), [format!("http://{upstream}")]);
    let read_timeout = duration(&directive("proxy_read_timeout")[0]);
    assert!(
        read_timeout > LONGEST_LONG_POLL,
        "proxy_read_timeout {read_timeout:?} outlasts a {LONGEST_LONG_POLL:?} long poll"
    );
    let body = size(&directive("client_max_body_size")[0]);
    assert!(
        body >= sqs_gateway::api::sqs::BODY_LIMIT,
        "client_max_body_size {body} takes the SQS endpoint's largest body"
    );
    let host = directives
        .iter()
        .find(|(_, name, args)| name == "proxy_set_header" && args[0].eq_ignore_ascii_case("host"))
        .map(|(_, _, args)| args[1].clone());
    assert_eq!(
        host.as_deref(),
        Some("$http_host"),
        "the Host as sent, port included: SigV4 signs it"
    );
}

#[test]
fn the_compose_lb_waits_for_the_three_replicas_and_publishes_nginx_on_8789() {
    let services = crate::packaging::compose::services();
    let lb = &services["lb"];
    assert_eq!(lb["image"].as_str(), Some("nginx:1.27-alpine"));
    for (name, _) in compose_replicas() {
        assert_eq!(
            lb["depends_on"][name.as_str()]["condition"].as_str(),
            Some("service_healthy"),
            "lb waits for {name} to be ready"
        );
    }
    let volumes = words(&lb["volumes"], "lb volumes");
    assert!(
        volumes.iter().any(|mount| {
            let parts: Vec<&str> = mount.split(':').collect();
            parts[0] == format!("./{NGINX_CONF}")
                && parts
                    .get(1)
                    .is_some_and(|path| path.starts_with("/etc/nginx/"))
                && parts.get(2) == Some(&"ro")
        }),
        "lb mounts {NGINX_CONF} read-only: {volumes:?}"
    );
    let listen: Vec<String> = nginx_directives()
        .into_iter()
        .filter(|(_, name, _)| name == "listen")
        .map(|(_, _, args)| args[0].clone())
        .collect();
    let ports = words(&lb["ports"], "lb ports");
    assert!(
        ports.iter().any(|mapping| {
            mapping
                .strip_prefix("127.0.0.1:8789:")
                .is_some_and(|inside| listen.iter().any(|port| port == inside))
        }),
        "127.0.0.1:8789 reaches nginx's listen {listen:?}: {ports:?}"
    );
}
