//! The config's parsing and checks, field by field.

use super::*;

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

fn minimal() -> String {
    format!(
        r#"
[backend]
kind = "sqs"
endpoint_url = "http://127.0.0.1:4566"

[queues.orders]
sqs_queue = "orders-prod"

[[receipt_keys]]
id = 1
secret = "{KEY}"

[ezgh.organizations.acme.projects.shop]
queues = {{ orders = "orders" }}
"#
    )
}

fn error_of(text: &str) -> String {
    Config::parse(text).unwrap_err().to_string()
}

#[test]
fn a_cluster_takes_seed_nodes_of_database_zero_all_tls_or_none() {
    let with = |redis: &str| format!("{}\n[state.redis]\n{redis}\n", minimal());
    let parsed = Config::parse(&with(
        "url = \"redis://a:6379\"\ncluster = true\nnodes = [\"redis://b:6379\", \"redis://c:6379/0\"]",
    ))
    .unwrap();
    let redis = parsed.state.redis.unwrap();
    assert_eq!(
        redis.node_urls().collect::<Vec<_>>(),
        ["redis://a:6379", "redis://b:6379", "redis://c:6379/0"]
    );
    let refused = error_of(&with(
        "url = \"redis://a:6379\"\nnodes = [\"redis://b:6379\"]",
    ));
    assert!(
        refused.contains("state.redis.nodes") && refused.contains("cluster = true"),
        "{refused}"
    );
    let refused = error_of(&with("url = \"redis://a:6379/2\"\ncluster = true"));
    assert!(
        refused.contains("state.redis.url") && refused.contains("database"),
        "{refused}"
    );
    let refused = error_of(&with(
        "url = \"rediss://a:6379\"\ncluster = true\nnodes = [\"redis://b:6379\"]",
    ));
    assert!(refused.contains("mixes TLS"), "{refused}");
    let refused = error_of(&with(
        "url = \"redis://a:6379\"\ncluster = true\nnodes = [\"redis://u:pw@b:6379\"]",
    ));
    assert!(
        refused.contains("state.redis.nodes") && !refused.contains("pw@"),
        "{refused}"
    );
}

#[test]
fn a_minimal_config_parses_with_defaults() {
    let config = Config::parse(&minimal()).unwrap();
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:8787");
    assert_eq!(config.queue_locators()["orders"], "orders-prod");
    assert_eq!(
        config.backend,
        BackendConfig::Sqs(SqsConfig {
            endpoint_url: Some("http://127.0.0.1:4566".into()),
            region: None,
            connect_timeout_seconds: 3,
            fan_in: true,
            fan_in_calls_in_flight: 4,
            connections: 16,
            fan_in_gather_ms: 20,
        })
    );
}

#[test]
fn sombus_connections_are_kept_beside_the_messages_and_its_ranges_are_checked() {
    let sqs = Config::parse(&minimal()).unwrap();
    assert_eq!(
        sqs.credentials_dir(),
        Some(PathBuf::from("sqs-gateway-data/sombus"))
    );
    assert_eq!(sqs.sombus.tiers()["standard"].requests_per_day, 100_000);
    let embedded = |backend: &str| {
        Config::parse(&minimal().replace(
            "kind = \"sqs\"\nendpoint_url = \"http://127.0.0.1:4566\"",
            backend,
        ))
        .unwrap()
        .credentials_dir()
    };
    assert_eq!(
        embedded("kind = \"embedded\"\ndata_dir = \"/var/lib/gw\""),
        Some(PathBuf::from("/var/lib/gw/sombus"))
    );
    assert_eq!(embedded("kind = \"embedded\"\nin_memory = true"), None);
    let chosen = format!(
        "{}\n[sombus]\ncredentials_dir = \"/shared/creds\"\n",
        minimal()
    );
    assert_eq!(
        Config::parse(&chosen).unwrap().credentials_dir(),
        Some(PathBuf::from("/shared/creds"))
    );
    for (setting, field) in [
        (
            "credential_recheck_seconds = 31",
            "sombus.credential_recheck_seconds",
        ),
        (
            "token_lifetime_seconds = 59",
            "sombus.token_lifetime_seconds",
        ),
        ("environment = \"a b\"", "sombus.environment"),
    ] {
        let text = format!("{}\n[sombus]\n{setting}\n", minimal());
        assert!(error_of(&text).starts_with(field), "{setting}");
    }
}

#[test]
fn a_per_address_connection_limit_is_at_least_one() {
    let config = Config::parse(&minimal()).unwrap();
    assert_eq!(config.server.max_connections_per_address, None);
    let text = format!("{}\n[server]\nmax_connections_per_address = 0\n", minimal());
    assert!(error_of(&text).starts_with("server.max_connections_per_address"));
}

#[test]
fn http2_is_on_by_default_and_its_stream_limit_is_bounded() {
    let config = Config::parse(&minimal()).unwrap();
    assert!(config.server.http2);
    assert_eq!(config.server.http2_max_streams, 100);
    for streams in [0, 1001] {
        let text = format!("{}\n[server]\nhttp2_max_streams = {streams}\n", minimal());
        assert!(
            error_of(&text).starts_with("server.http2_max_streams"),
            "{streams}"
        );
    }
    let off = format!("{}\n[server]\nhttp2 = false\n", minimal());
    assert!(!Config::parse(&off).unwrap().server.http2);
}

#[test]
fn worker_threads_default_to_the_cores_and_are_bounded() {
    assert_eq!(
        Config::parse(&minimal()).unwrap().server.worker_threads,
        None
    );
    let one = format!("{}\n[server]\nworker_threads = 1\n", minimal());
    assert_eq!(Config::parse(&one).unwrap().server.worker_threads, Some(1));
    for threads in [0, 1025] {
        let text = format!("{}\n[server]\nworker_threads = {threads}\n", minimal());
        assert!(
            error_of(&text).starts_with("server.worker_threads"),
            "{threads}"
        );
    }
}

#[test]
fn unknown_fields_name_their_path() {
    let text = minimal().replace("sqs_queue", "sqs_qeue");
    assert!(
        error_of(&text).starts_with("queues.orders.sqs_qeue: unknown field"),
        "{}",
        error_of(&text)
    );
    let text = minimal().replace("endpoint_url", "endpoint");
    assert!(
        error_of(&text).starts_with("backend"),
        "{}",
        error_of(&text)
    );
    let text = format!("{}\n[server]\nlisten = \"nope\"\n", minimal());
    assert!(
        error_of(&text).starts_with("server.listen:"),
        "{}",
        error_of(&text)
    );
}

#[test]
fn references_and_secrets_are_checked() {
    let text = minimal().replace("orders = \"orders\"", "orders = \"missing\"");
    assert!(error_of(&text).starts_with("ezgh.organizations.acme.projects.shop.queues.orders:"));
    let text = minimal().replace(KEY, "c2hvcnQ=");
    assert!(error_of(&text).starts_with("receipt_keys[0]:"));
    let text = minimal().replace(
        &format!("secret = \"{KEY}\""),
        "secret_env = \"SQSGW_TEST_SURELY_UNSET\"",
    );
    assert_eq!(
        error_of(&text),
        "receipt_keys[0].secret_env: environment variable SQSGW_TEST_SURELY_UNSET is not set"
    );
    let generated = crate::credentials::api_keys::generate_key();
    let with_key = format!(
        "{}\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ nope = [\"queues.messages.receive\"] }}\n",
        minimal(),
        generated.id,
        generated.hash
    );
    assert!(error_of(&with_key).starts_with("api_keys[0].grants.nope:"));
    let bad_action = with_key
        .replace("nope", "orders")
        .replace("queues.messages.receive", "fly");
    assert!(error_of(&bad_action).contains("unknown action `fly`"));
}

#[test]
fn secrets_never_show_in_debug_output() {
    let config = Config::parse(&minimal()).unwrap();
    assert!(!format!("{config:?}").contains(KEY));
}

#[test]
fn push_subscriptions_are_checked_field_by_field() {
    let with = |lines: &str, allow: bool| {
        format!(
            "{}\n[push]\nallow_private_networks = {allow}\n\n[[push.subscriptions]]\nname = \"hook\"\n\
             queue = \"orders\"\nsecret_env = \"HOOK_SECRET\"\n{lines}\n",
            minimal()
        )
    };
    let https = "url = \"https://hooks.example.com/orders\"";
    assert!(Config::parse(&with(https, false)).is_ok());
    for (lines, allow, field, says) in [
        (
            "url = \"http://hooks.example.com/\"",
            false,
            "push.subscriptions[0].url",
            "https://",
        ),
        ("url = \"http://127.0.0.1:9/\"", true, "", ""),
        (
            "url = \"https://user:pw@hooks.example.com/\"",
            false,
            "push.subscriptions[0].url",
            "credentials",
        ),
        (
            "url = \"ftp://hooks.example.com/\"",
            true,
            "push.subscriptions[0].url",
            "https://",
        ),
        (
            &format!("{https}\ntimeout_seconds = 61"),
            false,
            "push.subscriptions[0].timeout_seconds",
            "1 to 60",
        ),
        (
            &format!("{https}\nmax_concurrency = 0"),
            false,
            "push.subscriptions[0].max_concurrency",
            "1 to 100",
        ),
        (
            &format!("{https}\ntimeout_seconds = 20\nvisibility_timeout_seconds = 20"),
            false,
            "push.subscriptions[0].visibility_timeout_seconds",
            "longer than timeout_seconds",
        ),
        (
            &format!("{https}\nbody = \"raw\"\nhold_on_202 = true"),
            false,
            "push.subscriptions[0].hold_on_202",
            "wrapped",
        ),
    ] {
        let text = with(lines, allow);
        match Config::parse(&text) {
            Ok(_) => assert!(field.is_empty(), "{lines} was taken"),
            Err(error) => {
                let error = error.to_string();
                assert!(
                    error.starts_with(field) && error.contains(says),
                    "{lines}: {error}"
                );
            }
        }
    }
    let twice = format!(
        "{}\n[[push.subscriptions]]\nname = \"hook\"\nqueue = \"orders\"\n{https}\nsecret_env = \"X\"\n",
        with(https, false)
    );
    assert!(error_of(&twice).contains("listed twice"));
}

#[test]
fn tracing_is_off_by_default_and_its_settings_are_checked() {
    let config = Config::parse(&minimal()).unwrap();
    assert!(!config.tracing.enabled);
    assert_eq!(config.tracing.sample_ratio, 1.0);
    let on = format!(
        "{}\n[tracing]\nenabled = true\nendpoint = \"https://collector:4318/v1/traces\"\nsample_ratio = 0.25\n",
        minimal()
    );
    let parsed = Config::parse(&on).unwrap();
    assert!(parsed.tracing.enabled);
    assert_eq!(parsed.tracing.sample_ratio, 0.25);
    for (setting, field) in [
        ("sample_ratio = 1.5", "tracing.sample_ratio"),
        ("sample_ratio = -0.1", "tracing.sample_ratio"),
        ("endpoint = \"collector:4318\"", "tracing.endpoint"),
        (
            "endpoint = \"ftp://collector/v1/traces\"",
            "tracing.endpoint",
        ),
        (
            "endpoint = \"https://user:key@collector/v1/traces\"",
            "tracing.endpoint",
        ),
        ("service_name = \"\"", "tracing.service_name"),
        ("headers = { a = \"b\" }", "headers"),
    ] {
        let error = error_of(&format!("{}\n[tracing]\n{setting}\n", minimal()));
        assert!(error.contains(field), "{setting}: {error}");
        assert!(!error.contains("key@"), "{error}");
    }
}
