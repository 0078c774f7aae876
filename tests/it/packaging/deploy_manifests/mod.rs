//! Why: the manifests that run three replicas over SQS sharing one Valkey (deploy/kubernetes/,
//! compose.yaml's replica-1..3, valkey and lb, deploy/replicas.toml, deploy/nginx-replicas.conf)
//! never run in CI, which has no cluster and no container engine. This parses every one of them
//! and holds it against the code: the configs parse with the gateway's own parser, the secrets
//! they name are provided, the probes are the real routes (asked of the real binary), the grace
//! periods outlast the drain, the selectors and ports line up, and the image's user and port match.

mod kubernetes;
mod replicas;
mod support;
