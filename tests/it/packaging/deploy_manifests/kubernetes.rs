//! deploy/kubernetes held against the code: every file parses into named objects, the ConfigMap's
//! config parses with the gateway's parser and names only secrets the pods get, three replicas of
//! the image run as its non-root user, the grace period outlasts the drain, the Service and
//! disruption budget select the pods, the try-out Valkey is the one the config names, and the
//! probes are the real routes.

use super::support::*;
use crate::binary::{BIN, Running, free_port};
use crate::packaging::{REPO, repo_file};
use serde_norway::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
