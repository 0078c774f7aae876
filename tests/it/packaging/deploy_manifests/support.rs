//! Reading the deploy manifests for their tests: values of parsed YAML, the image as far as the
//! manifests need it, every Kubernetes object under deploy/kubernetes with the Deployment, its
//! container, ConfigMap and secrets, and compose.yaml's replicas.

use crate::packaging::{REPO, repo_file};
use serde::Deserialize as _;
use serde_norway::Value;
use sqs_gateway::config::Config;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const KUBERNETES: &str = "deploy/kubernetes";
pub const REPLICAS_TOML: &str = "deploy/replicas.toml";
pub const NGINX_CONF: &str = "deploy/nginx-replicas.conf";
/// The longest long poll: SQS's largest WaitTimeSeconds, and the gateway's.
pub const LONGEST_LONG_POLL: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Reading values.

pub fn text<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what}: a string, not {value:?}"))
}

pub fn number(value: &Value, what: &str) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: a number, not {value:?}"))
}

pub fn list<'a>(value: &'a Value, what: &str) -> &'a [Value] {
    value
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{what}: a list, not {value:?}"))
}

/// A mapping of strings to strings (labels, selectors, environment).
pub fn strings(value: &Value, what: &str) -> BTreeMap<String, String> {
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
pub fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty()
        && selector
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
}

/// A compose or nginx duration: `50s`, `1m30s`, `500ms`, or bare seconds.
pub fn duration(text: &str) -> Duration {
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
pub fn size(text: &str) -> usize {
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
pub struct Image {
    pub uid: u64,
    pub port: u16,
}

pub fn image() -> Image {
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
pub struct Object {
    pub file: PathBuf,
    pub value: Value,
}

impl Object {
    pub fn kind(&self) -> &str {
        text(&self.value["kind"], "kind")
    }

    pub fn name(&self) -> &str {
        text(&self.value["metadata"]["name"], "metadata.name")
    }
}

/// The YAML files under `dir`, its subdirectories included, by path.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
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
pub fn objects() -> Vec<Object> {
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
pub fn object<'a>(objects: &'a [Object], kind: &str, name: Option<&str>) -> &'a Object {
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
pub fn is_example(object: &Object) -> bool {
    object
        .file
        .strip_prefix(Path::new(REPO).join(KUBERNETES))
        .is_ok_and(|relative| relative.starts_with("example"))
}

/// The gateway's Deployment (the one not in example/).
pub fn deployment(objects: &[Object]) -> &Object {
    let found: Vec<&Object> = objects
        .iter()
        .filter(|object| object.kind() == "Deployment" && !is_example(object))
        .collect();
    assert_eq!(found.len(), 1, "one gateway Deployment");
    found[0]
}

pub fn pod_spec(deployment: &Object) -> &Value {
    &deployment.value["spec"]["template"]["spec"]
}

pub fn pod_labels(deployment: &Object) -> BTreeMap<String, String> {
    strings(
        &deployment.value["spec"]["template"]["metadata"]["labels"],
        "pod labels",
    )
}

/// The gateway's container: the one running the image of this repository.
pub fn container(deployment: &Object) -> &Value {
    let containers = list(&pod_spec(deployment)["containers"], "containers");
    assert_eq!(containers.len(), 1, "one container in the gateway's pods");
    &containers[0]
}

/// A container port by name or number (a probe's or a Service's target).
pub fn container_port(container: &Value, port: &Value) -> u64 {
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
pub fn configmap_config(objects: &[Object]) -> (String, String) {
    let configmap = object(objects, "ConfigMap", None);
    let data = strings(&configmap.value["data"], "ConfigMap data");
    let (key, text) = data
        .into_iter()
        .find(|(key, _)| key.ends_with(".toml"))
        .expect("a .toml file in the ConfigMap");
    (key, text)
}

/// `at.key`, or `key` at the top.
pub fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// The config's `secret_env` variables, by the table that names them (`receipt_keys[0]`, ...).
pub fn secret_envs(value: &toml::Value, at: &str, found: &mut Vec<(String, String)>) {
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
pub fn inline_secrets(value: &toml::Value, at: &str, found: &mut Vec<String>) {
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
pub fn with_secret_files(value: &mut toml::Value, at: &str, dir: &Path) {
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
pub fn parsed_configmap(objects: &[Object]) -> Config {
    let (key, text) = configmap_config(objects);
    let mut value: toml::Value =
        toml::from_str(&text).unwrap_or_else(|error| panic!("ConfigMap {key}: {error}"));
    let dir = tempfile::tempdir().unwrap();
    with_secret_files(&mut value, "", dir.path());
    let text = toml::to_string(&value).unwrap();
    Config::parse(&text).unwrap_or_else(|error| panic!("ConfigMap {key}: {error}"))
}

/// The variable the ConfigMap's config reads the `table`'s secret from.
pub fn configmap_secret_env(objects: &[Object], table: &str) -> Option<String> {
    let (_, text) = configmap_config(objects);
    let mut named = Vec::new();
    secret_envs(&toml::from_str(&text).unwrap(), "", &mut named);
    named
        .into_iter()
        .find(|(at, _)| at == table)
        .map(|(_, name)| name)
}

/// The Deployment's environment: variable → (Secret, key) of its `secretKeyRef`, if any.
pub fn secret_refs(container: &Value) -> BTreeMap<String, Option<(String, String)>> {
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
pub fn secret_keys(secret: &Object) -> BTreeSet<String> {
    ["stringData", "data"]
        .iter()
        .filter(|field| !secret.value[**field].is_null())
        .flat_map(|field| strings(&secret.value[*field], field).into_keys())
        .collect()
}

/// The seconds of the container's preStop pause (`exec sleep N` or `sleep: {seconds: N}`).
pub fn pre_stop_seconds(container: &Value) -> u64 {
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

/// The services named `replica-N`, by name.
pub fn compose_replicas() -> Vec<(String, Value)> {
    crate::packaging::compose::services()
        .into_iter()
        .filter_map(|(name, service)| {
            let name = text(&name, "service name").to_owned();
            name.starts_with("replica-").then_some((name, service))
        })
        .collect()
}

pub fn words(value: &Value, what: &str) -> Vec<String> {
    list(value, what)
        .iter()
        .map(|word| text(word, what).to_owned())
        .collect()
}

/// The path a replica's health check probes (`sqs-gateway probe --url http://…/PATH`).
pub fn replica_health_path(service: &Value) -> String {
    let test = words(&service["healthcheck"]["test"], "healthcheck.test");
    let url = test
        .iter()
        .position(|word| word == "--url")
        .and_then(|at| test.get(at + 1))
        .unwrap_or_else(|| panic!("a probe --url health check: {test:?}"));
    url::Url::parse(url).unwrap().path().to_owned()
}
