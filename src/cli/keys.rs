//! `sqs-gateway new-api-key` and `new-receipt-key`: the secrets a config needs.

use super::EXIT_CONFIG;
use sqs_gateway::credentials::api_keys;
use sqs_gateway::setup;
use std::path::PathBuf;
use std::process::ExitCode;

/// Prints a new API key once, and its config entry (or adds it to a data directory's config).
pub(super) fn new_api_key(
    organization: Option<String>,
    data_dir: Option<PathBuf>,
    name: Option<String>,
    receive_on: Vec<String>,
) -> ExitCode {
    if let Some(data_dir) = data_dir {
        let organization = organization.unwrap_or_else(|| setup::ORGANIZATION.to_owned());
        let name = name.unwrap_or_else(|| "added".to_owned());
        return match setup::add_api_key(&data_dir, &organization, &name, &receive_on) {
            Ok(key) => {
                println!("# The key, shown once; only its hash is in the config.");
                println!("# The gateway uses it from its next start.");
                println!("export SQSGW_API_KEY={key}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("cannot add a key: {error}");
                ExitCode::from(EXIT_CONFIG)
            }
        };
    }
    let organization = organization.unwrap_or_default();
    let generated = api_keys::generate_key();
    println!("# The key, shown once; give it to the client and keep it nowhere else:");
    println!("#   {}", generated.key);
    println!("[[api_keys]]");
    println!("id = \"{}\"", generated.id);
    if let Some(name) = name {
        println!("name = {}", toml_string(&name));
    }
    println!("organization = {}", toml_string(&organization));
    println!("hash = \"{}\"", generated.hash);
    let grants: Vec<String> = receive_on
        .iter()
        .map(|queue| format!("{} = [\"{}\"]", toml_key(queue), api_keys::RECEIVE))
        .collect();
    println!("grants = {{ {} }}", grants.join(", "));
    ExitCode::SUCCESS
}

fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_owned()
    } else {
        toml_string(key)
    }
}
