//! Why: the manifests that run three replicas over SQS sharing one Valkey (deploy/kubernetes/,
//! compose.yaml's replica-1..3, valkey and lb, deploy/replicas.toml, deploy/nginx-replicas.conf)
//! never run in CI, which has no cluster and no container engine. This parses every one of them
//! and holds it against the code: the configs parse with the gateway's own parser, the secrets
//! they name are provided, the probes are the real routes (asked of the real binary), the grace
//! periods outlast the drain, the selectors and ports line up, and the image's user and port match.

use crate::binary::{BIN, Running, free_port};
use serde::Deserialize as _;
use serde_norway::Value;
use sqs_gateway::config::Config;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{REPO, repo_file};
const KUBERNETES: &str = "deploy/kubernetes";
const REPLICAS_TOML: &str = "deploy/replicas.toml";
const NGINX_CONF: &str = "deploy/nginx-replicas.conf";
/// The longest long poll: SQS's largest WaitTimeSeconds, and the gateway's.
const LONGEST_LONG_POLL: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Reading values.

fn text<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what}: a string, not {value:?}"))
}

fn number(value: &Value, what: &str) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: a number, not {value:?}"))
}

fn list<'a>(value: &'a Value, what: &str) -> &'a [Value] {
    value
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{what}: a list, not {value:?}"))
}

/// A mapping of strings to strings (labels, selectors, environment).
fn strings(value: &Value, what: &str) -> BTreeMap<String, String> {
    value
        .as_mapping()
        .unwrap_or_else(|| panic!("{what}: a mapping, not {value:?}"))
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::String(text) => text.clone(),
                Value::Bool(flag) => flag.to_string(),
                Value::Number(number) => number.to_string(),
                other => panic!("{what}: {other:?} is not a plain value"),
            };
            (text(key, what).to_owned(), value)
        })
        .collect()
}

/// Whether every label of `selector` is among `labels`, with the same value.
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty()
        && selector
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
}

/// A compose or nginx duration: `50s`, `1m30s`, `500ms`, or bare seconds.
fn duration(text: &str) -> Duration {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Duration::from_secs(seconds);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let amount: u64 = rest[..digits]
            .parse()
            .unwrap_or_else(|_| panic!("a duration: {text}"));
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        total += match &rest[..unit] {
            "ms" => Duration::from_millis(amount),
            "s" => Duration::from_secs(amount),
            "m" => Duration::from_secs(amount * 60),
            "h" => Duration::from_secs(amount * 3600),
            other => panic!("{text}: unit {other:?}"),
        };
        rest = &rest[unit..];
    }
    total
}

/// An nginx size: `4m`, `512k`, or bytes.
fn size(text: &str) -> usize {
    let text = text.trim().to_ascii_lowercase();
    let (digits, factor) = match text.as_bytes().last() {
        Some(b'k') => (&text[..text.len() - 1], 1024),
        Some(b'm') => (&text[..text.len() - 1], 1024 * 1024),
        Some(b'g') => (&text[..text.len() - 1], 1024 * 1024 * 1024),
        _ => (text.as_str(), 1),
    };
    digits
        .parse::<usize>()
        .unwrap_or_else(|_| panic!("a size: {text}"))
        * factor
}

// ---------------------------------------------------------------------------------------------
// The image, as far as the manifests need it.

/// What the Dockerfile says about the running container.
struct Image {
    uid: u64,
    port: u16,
}

fn image() -> Image {
    let dockerfile = repo_file("Dockerfile");
    let user = dockerfile
        .lines()
        .find_map(|line| line.trim().strip_prefix("USER "))
        .expect("a USER instruction");
    let uid = user
        .split(':')
        .next()
        .and_then(|uid| uid.trim().parse().ok())
        .unwrap_or_else(|| panic!("USER {user} is a numeric uid"));
    let listen = dockerfile
        .split_whitespace()
        .find_map(|word| word.strip_prefix("SQSGW_LISTEN="))
        .expect("ENV SQSGW_LISTEN");
    let port = listen
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("SQSGW_LISTEN={listen}"));
    Image { uid, port }
}

// ---------------------------------------------------------------------------------------------
// deploy/kubernetes, every file and every document in it.

/// One Kubernetes object and the file it came from.
struct Object {
    file: PathBuf,
    value: Value,
}

impl Object {
    fn kind(&self) -> &str {
        text(&self.value["kind"], "kind")
    }

    fn name(&self) -> &str {
        text(&self.value["metadata"]["name"], "metadata.name")
    }
}

/// The YAML files under `dir`, its subdirectories included, by path.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{dir:?}: {error}")) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(yaml_files(&path));
        } else if path
            .extension()
            .is_some_and(|extension| extension == "yaml" || extension == "yml")
        {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Every object of every YAML file under deploy/kubernetes.
fn objects() -> Vec<Object> {
    let mut objects = Vec::new();
    for file in yaml_files(&Path::new(REPO).join(KUBERNETES)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for document in serde_norway::Deserializer::from_str(&text) {
            let value = Value::deserialize(document)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            if !value.is_null() {
                objects.push(Object {
                    file: file.clone(),
                    value,
                });
            }
        }
    }
    objects
}

/// The one object of `kind` (named `name`, when given).
fn object<'a>(objects: &'a [Object], kind: &str, name: Option<&str>) -> &'a Object {
    let found: Vec<&Object> = objects
        .iter()
        .filter(|object| object.kind() == kind && name.is_none_or(|name| object.name() == name))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind} {name:?} under {KUBERNETES}, found {}",
        found.len()
    );
    found[0]
}

/// Whether `object` comes from `example/` (applied only by hand, for trying the set out).
fn is_example(object: &Object) -> bool {
    object
        .file
        .strip_prefix(Path::new(REPO).join(KUBERNETES))
        .is_ok_and(|relative| relative.starts_with("example"))
}

/// The gateway's Deployment (the one not in example/).
fn deployment(objects: &[Object]) -> &Object {
    let found: Vec<&Object> = objects
        .iter()
        .filter(|object| object.kind() == "Deployment" && !is_example(object))
        .collect();
    assert_eq!(found.len(), 1, "one gateway Deployment");
    found[0]
}

fn pod_spec(deployment: &Object) -> &Value {
    &deployment.value["spec"]["template"]["spec"]
}

fn pod_labels(deployment: &Object) -> BTreeMap<String, String> {
    strings(
        &deployment.value["spec"]["template"]["metadata"]["labels"],
        "pod labels",
    )
}

/// The gateway's container: the one running the image of this repository.
fn container(deployment: &Object) -> &Value {
    let containers = list(&pod_spec(deployment)["containers"], "containers");
    assert_eq!(containers.len(), 1, "one container in the gateway's pods");
    &containers[0]
}

/// A container port by name or number (a probe's or a Service's target).
fn container_port(container: &Value, port: &Value) -> u64 {
    let ports = list(&container["ports"], "container ports");
    match port {
        Value::String(name) => ports
            .iter()
            .find(|entry| entry["name"].as_str() == Some(name))
            .map(|entry| number(&entry["containerPort"], "containerPort"))
            .unwrap_or_else(|| panic!("no container port named {name}")),
        number_value => {
            let wanted = number(number_value, "port");
            assert!(
                ports
                    .iter()
                    .any(|entry| entry["containerPort"].as_u64() == Some(wanted)),
                "no container port {wanted}"
            );
            wanted
        }
    }
}

/// The ConfigMap's config file: its name in `data` and its text.
fn configmap_config(objects: &[Object]) -> (String, String) {
    let configmap = object(objects, "ConfigMap", None);
    let data = strings(&configmap.value["data"], "ConfigMap data");
    let (key, text) = data
        .into_iter()
        .find(|(key, _)| key.ends_with(".toml"))
        .expect("a .toml file in the ConfigMap");
    (key, text)
}

/// `at.key`, or `key` at the top.
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// The config's `secret_env` variables, by the table that names them (`receipt_keys[0]`, ...).
fn secret_envs(value: &toml::Value, at: &str, found: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            if let Some(name) = table.get("secret_env").and_then(toml::Value::as_str) {
                found.push((at.to_owned(), name.to_owned()));
            }
            for (key, value) in table {
                secret_envs(value, &join(at, key), found);
            }
        }
        toml::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                secret_envs(item, &format!("{at}[{index}]"), found);
            }
        }
        _ => {}
    }
}

/// Tables of the config that hold a secret inline (`secret = ...`).
fn inline_secrets(value: &toml::Value, at: &str, found: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) => {
            if table.contains_key("secret") {
                found.push(at.to_owned());
            }
            for (key, value) in table {
                inline_secrets(value, &join(at, key), found);
            }
        }
        toml::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                inline_secrets(item, &format!("{at}[{index}]"), found);
            }
        }
        _ => {}
    }
}

/// Replaces every `secret_env` with a `secret_file` holding a value of the right shape (a fresh
/// receipt key, or a long secret), as the pods' environment would: the config then parses here
/// without setting this process's environment. The files are kept in `dir`.
fn with_secret_files(value: &mut toml::Value, at: &str, dir: &Path) {
    match value {
        toml::Value::Table(table) => {
            if let Some(toml::Value::String(name)) = table.remove("secret_env") {
                let secret = if at.starts_with("receipt_keys") {
                    sqs_gateway::core::handle::Keyring::generate_key()
                } else {
                    format!("a-test-value-for-{name}-long-enough")
                };
                let file = dir.join(&name);
                std::fs::write(&file, secret).unwrap();
                table.insert(
                    "secret_file".into(),
                    toml::Value::String(file.to_str().unwrap().to_owned()),
                );
            }
            for (key, value) in table.iter_mut() {
                with_secret_files(value, &join(at, key), dir);
            }
        }
        toml::Value::Array(items) => {
            for item in items {
                with_secret_files(item, &format!("{at}[]"), dir);
            }
        }
        _ => {}
    }
}

/// The ConfigMap's config, parsed with `Config::parse` with its secrets provided (so its
/// `secret_env` fields read as `secret_file`).
fn parsed_configmap(objects: &[Object]) -> Config {
    let (key, text) = configmap_config(objects);
    let mut value: toml::Value =
        toml::from_str(&text).unwrap_or_else(|error| panic!("ConfigMap {key}: {error}"));
    let dir = tempfile::tempdir().unwrap();
    with_secret_files(&mut value, "", dir.path());
    let text = toml::to_string(&value).unwrap();
    Config::parse(&text).unwrap_or_else(|error| panic!("ConfigMap {key}: {error}"))
}

/// The variable the ConfigMap's config reads the `table`'s secret from.
fn configmap_secret_env(objects: &[Object], table: &str) -> Option<String> {
    let (_, text) = configmap_config(objects);
    let mut named = Vec::new();
    secret_envs(&toml::from_str(&text).unwrap(), "", &mut named);
    named
        .into_iter()
        .find(|(at, _)| at == table)
        .map(|(_, name)| name)
}

/// The Deployment's environment: variable → (Secret, key) of its `secretKeyRef`, if any.
fn secret_refs(container: &Value) -> BTreeMap<String, Option<(String, String)>> {
    list(&container["env"], "env")
        .iter()
        .map(|entry| {
            let name = text(&entry["name"], "env name").to_owned();
            let reference = &entry["valueFrom"]["secretKeyRef"];
            let reference = (!reference.is_null()).then(|| {
                (
                    text(&reference["name"], "secretKeyRef.name").to_owned(),
                    text(&reference["key"], "secretKeyRef.key").to_owned(),
                )
            });
            (name, reference)
        })
        .collect()
}

/// The keys of a Secret (`stringData` and `data`).
fn secret_keys(secret: &Object) -> BTreeSet<String> {
    ["stringData", "data"]
        .iter()
        .filter(|field| !secret.value[**field].is_null())
        .flat_map(|field| strings(&secret.value[*field], field).into_keys())
        .collect()
}

/// The seconds of the container's preStop pause (`exec sleep N` or `sleep: {seconds: N}`).
fn pre_stop_seconds(container: &Value) -> u64 {
    let pre_stop = &container["lifecycle"]["preStop"];
    if let Some(seconds) = pre_stop["sleep"]["seconds"].as_u64() {
        return seconds;
    }
    let command: Vec<&str> = list(&pre_stop["exec"]["command"], "preStop.exec.command")
        .iter()
        .map(|word| text(word, "preStop command"))
        .collect();
    match command.as_slice() {
        [sleep, seconds] if sleep.ends_with("sleep") => seconds
            .parse()
            .unwrap_or_else(|_| panic!("preStop {command:?}")),
        _ => panic!("a preStop pause (sleep N), not {command:?}"),
    }
}

#[test]
fn every_yaml_file_under_deploy_kubernetes_parses_into_named_kubernetes_objects() {
    let objects = objects();
    let files: BTreeSet<&PathBuf> = objects.iter().map(|object| &object.file).collect();
    assert_eq!(
        files.len(),
        yaml_files(&Path::new(REPO).join(KUBERNETES)).len(),
        "every YAML file holds an object"
    );
    for object in &objects {
        let file = object.file.display();
        assert!(
            object.value["apiVersion"].as_str().is_some(),
            "{file}: apiVersion"
        );
        assert!(!object.kind().is_empty(), "{file}: kind");
        assert!(!object.name().is_empty(), "{file}: metadata.name");
    }
    let kinds: BTreeSet<&str> = objects
        .iter()
        .filter(|object| !is_example(object))
        .map(Object::kind)
        .collect();
    for kind in [
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ServiceAccount",
    ] {
        assert!(kinds.contains(kind), "a {kind} in {KUBERNETES}");
    }
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.starts_with("# Why:"),
            "{} starts by saying why it exists",
            file.display()
        );
    }
    assert!(
        repo_file(&format!("{KUBERNETES}/README.md"))
            .contains("kubectl apply -f deploy/kubernetes/"),
        "the README says how to apply the manifests"
    );
}

#[test]
fn the_configmap_config_parses_with_the_gateways_parser_and_shares_its_state_in_redis() {
    let objects = objects();
    let config = parsed_configmap(&objects);
    let redis = config.state.redis.as_ref().expect("[state.redis] is set");
    let url = url::Url::parse(&redis.url).unwrap();
    assert_eq!(url.host_str(), Some("valkey"), "{}", redis.url);
    assert!(
        configmap_secret_env(&objects, "state.redis").is_some(),
        "the store's password comes from the environment"
    );
    assert!(!config.receipt_keys.is_empty());
    assert!(
        matches!(config.backend, sqs_gateway::config::BackendConfig::Sqs(_)),
        "the sqs backend"
    );
}

#[test]
fn the_configmap_holds_no_inline_secret_and_every_secret_env_is_in_the_deployments_env() {
    let objects = objects();
    let (key, text) = configmap_config(&objects);
    let value: toml::Value = toml::from_str(&text).unwrap();
    let mut inline = Vec::new();
    inline_secrets(&value, "", &mut inline);
    assert!(
        inline.is_empty(),
        "inline secrets in the ConfigMap: {inline:?}"
    );
    let mut named = Vec::new();
    secret_envs(&value, "", &mut named);
    let tables: BTreeSet<&str> = named.iter().map(|(at, _)| at.as_str()).collect();
    for table in ["receipt_keys[0]", "state.redis"] {
        assert!(
            tables.contains(table),
            "{table} takes its secret from the environment"
        );
    }
    let env = secret_refs(container(deployment(&objects)));
    for (at, name) in &named {
        match env.get(name) {
            Some(Some(_)) => {}
            Some(None) => panic!("{at}'s {name} is in the Deployment's env, but not from a Secret"),
            None => panic!("{key}: {at} reads {name}, which the Deployment's env does not set"),
        }
    }
}

#[test]
fn every_secret_the_pods_read_is_a_key_of_the_example_secret() {
    let objects = objects();
    let secret = object(&objects, "Secret", None);
    assert!(
        is_example(secret),
        "the example Secret is in example/, never applied by the directory"
    );
    let keys = secret_keys(secret);
    let mut references: Vec<(String, (String, String))> = Vec::new();
    for object in objects
        .iter()
        .filter(|object| matches!(object.kind(), "Deployment" | "StatefulSet"))
    {
        for container in list(
            &object.value["spec"]["template"]["spec"]["containers"],
            "containers",
        ) {
            for (name, reference) in secret_refs(container) {
                if let Some(reference) = reference {
                    references.push((format!("{} {name}", object.name()), reference));
                }
            }
        }
    }
    assert!(!references.is_empty());
    for (who, (name, key)) in references {
        assert_eq!(name, secret.name(), "{who} reads the Secret {name}");
        assert!(
            keys.contains(&key),
            "{who} reads key {key}, which the example Secret lacks"
        );
    }
}

#[test]
fn the_deployment_runs_three_replicas_of_the_image_as_its_non_root_user() {
    let objects = objects();
    let image = image();
    let deployment = deployment(&objects);
    assert_eq!(number(&deployment.value["spec"]["replicas"], "replicas"), 3);
    let selector = strings(
        &deployment.value["spec"]["selector"]["matchLabels"],
        "selector",
    );
    assert!(
        selects(&selector, &pod_labels(deployment)),
        "the Deployment selects its own pods"
    );

    let pod = pod_spec(deployment);
    let container = container(deployment);
    assert!(
        text(&container["image"], "image").contains("sqs-gateway"),
        "the gateway's image"
    );
    let http = container_port(container, &Value::String("http".into()));
    assert_eq!(http, u64::from(image.port), "the port of SQSGW_LISTEN");
    for probe in ["readinessProbe", "livenessProbe"] {
        let port = container_port(container, &container[probe]["httpGet"]["port"]);
        assert_eq!(
            port,
            u64::from(image.port),
            "{probe} asks the listening port"
        );
    }

    // The config file the command names is the ConfigMap's, mounted from it.
    let args: Vec<&str> = list(&container["args"], "args")
        .iter()
        .map(|arg| text(arg, "arg"))
        .collect();
    assert_eq!(args.first(), Some(&"serve"), "{args:?}");
    let config_path = args
        .iter()
        .position(|arg| *arg == "--config")
        .and_then(|at| args.get(at + 1))
        .expect("serve --config FILE");
    let configmap = object(&objects, "ConfigMap", None);
    let (key, _) = configmap_config(&objects);
    let volumes = list(&pod["volumes"], "volumes");
    let config_volume = volumes
        .iter()
        .find(|volume| volume["configMap"]["name"].as_str() == Some(configmap.name()))
        .expect("a volume of the ConfigMap");
    let mount = list(&container["volumeMounts"], "volumeMounts")
        .iter()
        .find(|mount| mount["name"] == config_volume["name"])
        .expect("the ConfigMap's volume is mounted");
    assert!(
        mount["subPath"].is_null(),
        "no subPath: it would never see an edit"
    );
    assert_eq!(
        *config_path,
        format!("{}/{key}", text(&mount["mountPath"], "mountPath")),
        "--config names the ConfigMap's file"
    );

    // Security: the image's unprivileged user, nothing to escalate to, nothing to write but volumes.
    let pod_security = &pod["securityContext"];
    let security = &container["securityContext"];
    let setting = |field: &str| {
        let own = &security[field];
        if own.is_null() {
            pod_security[field].clone()
        } else {
            own.clone()
        }
    };
    assert_eq!(
        setting("runAsNonRoot").as_bool(),
        Some(true),
        "runAsNonRoot"
    );
    assert_eq!(
        setting("runAsUser").as_u64(),
        Some(image.uid),
        "the Dockerfile's USER"
    );
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    for kind in ["requests", "limits"] {
        assert!(
            !container["resources"][kind]["memory"].is_null(),
            "resources.{kind}.memory"
        );
    }
    assert!(!container["resources"]["requests"]["cpu"].is_null());

    // The account it names exists among the manifests.
    let account = text(&pod["serviceAccountName"], "serviceAccountName");
    object(&objects, "ServiceAccount", Some(account));
}

#[test]
fn the_sombus_credentials_are_on_the_shared_server_not_a_pods_volume() {
    let objects = objects();
    let config = parsed_configmap(&objects);
    assert!(
        config.state.redis.is_some(),
        "the replicas share one state server, which keeps the sombus connections too"
    );
    assert!(
        config.sombus.credentials_dir.is_none(),
        "no credential directory: a pod's volume is its own"
    );
}

#[test]
fn the_termination_grace_period_outlasts_the_pre_stop_pause_the_drain_and_a_long_poll() {
    let objects = objects();
    let config = parsed_configmap(&objects);
    let deployment = deployment(&objects);
    let grace = number(
        &pod_spec(deployment)["terminationGracePeriodSeconds"],
        "terminationGracePeriodSeconds",
    );
    let pause = pre_stop_seconds(container(deployment));
    assert!(
        pause >= 1,
        "a preStop pause lets the Service stop routing before the drain"
    );
    let needed = pause + config.server.shutdown_grace_seconds + LONGEST_LONG_POLL.as_secs();
    assert!(
        grace > needed,
        "terminationGracePeriodSeconds {grace} must exceed preStop {pause} + shutdown_grace_seconds {} + a {} s long poll",
        config.server.shutdown_grace_seconds,
        LONGEST_LONG_POLL.as_secs()
    );
}

#[test]
fn the_service_selects_the_gateways_pods_and_targets_its_listening_port() {
    let objects = objects();
    let image = image();
    let deployment = deployment(&objects);
    let service = object(&objects, "Service", Some("sqs-gateway"));
    let selector = strings(&service.value["spec"]["selector"], "Service selector");
    assert!(selects(&selector, &pod_labels(deployment)), "{selector:?}");
    let container = container(deployment);
    let ports = list(&service.value["spec"]["ports"], "Service ports");
    let targets: Vec<u64> = ports
        .iter()
        .map(|port| container_port(container, &port["targetPort"]))
        .collect();
    assert!(
        targets.contains(&u64::from(image.port)),
        "a Service port targets {}: {targets:?}",
        image.port
    );
    let config = parsed_configmap(&objects);
    if let Some(metrics) = config.metrics.listen {
        assert!(
            targets.contains(&u64::from(metrics.port())),
            "a Service port targets metrics.listen {metrics}"
        );
    }
}

#[test]
fn the_disruption_budget_keeps_fewer_than_all_replicas_and_selects_the_deployments_pods() {
    let objects = objects();
    let deployment = deployment(&objects);
    let replicas = number(&deployment.value["spec"]["replicas"], "replicas");
    let budget = object(&objects, "PodDisruptionBudget", None);
    let min_available = number(&budget.value["spec"]["minAvailable"], "minAvailable");
    assert!(
        (1..replicas).contains(&min_available),
        "minAvailable {min_available} of {replicas} replicas: a drain can evict one"
    );
    let selector = strings(
        &budget.value["spec"]["selector"]["matchLabels"],
        "PDB selector",
    );
    assert!(selects(&selector, &pod_labels(deployment)), "{selector:?}");
}

#[test]
fn the_try_out_valkey_is_the_service_the_config_names_and_takes_the_gateways_password() {
    let objects = objects();
    let config = parsed_configmap(&objects);
    let redis = config.state.redis.as_ref().expect("[state.redis]");
    let url = url::Url::parse(&redis.url).unwrap();
    let host = url.host_str().unwrap();
    let port = u64::from(url.port().unwrap_or(6379));
    let service = object(&objects, "Service", Some(host));
    assert!(
        is_example(service),
        "Valkey is yours to run: the try-out one is in example/"
    );
    let statefulset = object(&objects, "StatefulSet", Some(host));
    let labels = strings(
        &statefulset.value["spec"]["template"]["metadata"]["labels"],
        "Valkey pod labels",
    );
    assert!(selects(
        &strings(&service.value["spec"]["selector"], "Valkey selector"),
        &labels
    ));
    let valkey = &list(
        &statefulset.value["spec"]["template"]["spec"]["containers"],
        "containers",
    )[0];
    let service_port = list(&service.value["spec"]["ports"], "Valkey Service ports")
        .iter()
        .find(|entry| entry["port"].as_u64() == Some(port))
        .unwrap_or_else(|| panic!("the Valkey Service serves port {port}"));
    assert_eq!(container_port(valkey, &service_port["targetPort"]), 6379);

    let variable = configmap_secret_env(&objects, "state.redis").expect("state.redis.secret_env");
    let gateway = secret_refs(container(deployment(&objects)))[&variable]
        .clone()
        .expect("from a Secret");
    let valkey_env = secret_refs(valkey);
    assert!(
        valkey_env
            .values()
            .any(|reference| reference.as_ref() == Some(&gateway)),
        "Valkey's password is the gateway's {variable}: {gateway:?}"
    );
}

/// The readiness and liveness paths the manifests probe: the Deployment's, and those of the
/// compose replicas' health check.
#[tokio::test]
async fn the_probes_are_the_real_routes_readiness_fails_while_the_state_store_is_down_liveness_does_not()
 {
    let objects = objects();
    let container = container(deployment(&objects));
    let readiness = text(
        &container["readinessProbe"]["httpGet"]["path"],
        "readiness path",
    );
    let liveness = text(
        &container["livenessProbe"]["httpGet"]["path"],
        "liveness path",
    );
    let compose_readiness = compose_replicas()
        .iter()
        .map(|(_, service)| replica_health_path(service))
        .collect::<BTreeSet<_>>();

    // The real binary, its state store a port where nothing listens.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sqs-gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[state.redis]\nurl = \"redis://127.0.0.1:{}/0\"\ntimeout_ms = 200\n",
            sqs_gateway::core::handle::Keyring::generate_key(),
            free_port()
        ),
    )
    .unwrap();
    let mut command = Command::new(BIN);
    command.arg("serve").arg("--config").arg(&config);
    let mut gateway = Running::spawn(command);
    let address = gateway.address(Duration::from_secs(20));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let get = |path: String| {
        let http = http.clone();
        let url = format!("http://{address}{path}");
        async move {
            let answer = http.get(&url).send().await.unwrap();
            let status = answer.status().as_u16();
            (status, answer.text().await.unwrap())
        }
    };
    let (status, body) = get(readiness.to_owned()).await;
    assert_eq!(status, 503, "readiness {readiness}: {body}");
    assert!(
        body.contains("state_store"),
        "readiness {readiness}: {body}"
    );
    let (status, body) = get(liveness.to_owned()).await;
    assert_eq!(
        status, 200,
        "liveness {liveness} does not fail with the store: {body}"
    );
    for path in compose_readiness {
        let (status, body) = get(path.clone()).await;
        assert_eq!(status, 503, "compose replicas' health check {path}: {body}");
        assert!(body.contains("state_store"), "{path}: {body}");
    }
}

// ---------------------------------------------------------------------------------------------
// compose.yaml's replicated set, deploy/replicas.toml, deploy/nginx-replicas.conf.

/// The services named `replica-N`, by name.
fn compose_replicas() -> Vec<(String, Value)> {
    super::compose::services()
        .into_iter()
        .filter_map(|(name, service)| {
            let name = text(&name, "service name").to_owned();
            name.starts_with("replica-").then_some((name, service))
        })
        .collect()
}

fn words(value: &Value, what: &str) -> Vec<String> {
    list(value, what)
        .iter()
        .map(|word| text(word, what).to_owned())
        .collect()
}

/// The path a replica's health check probes (`sqs-gateway probe --url http://…/PATH`).
fn replica_health_path(service: &Value) -> String {
    let test = words(&service["healthcheck"]["test"], "healthcheck.test");
    let url = test
        .iter()
        .position(|word| word == "--url")
        .and_then(|at| test.get(at + 1))
        .unwrap_or_else(|| panic!("a probe --url health check: {test:?}"));
    url::Url::parse(url).unwrap().path().to_owned()
}

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
    let services = super::compose::services();
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
    let services = super::compose::services();
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
