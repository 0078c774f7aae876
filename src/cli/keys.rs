//! `sqs-gateway new-api-key`, `new-basaltic-key`, `new-admin-key` and `new-receipt-key`: the secrets
//! a config needs.

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
                println!("{PICKED_UP}");
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

/// Prints a new admin key once, and its config entry (or adds it to a data directory's config).
pub(super) fn new_admin_key(
    workspaces: &[String],
    role: &str,
    name: Option<String>,
    data_dir: Option<PathBuf>,
) -> ExitCode {
    if !["viewer", "developer", "admin"].contains(&role) {
        eprintln!("--role must be viewer, developer or admin");
        return ExitCode::from(EXIT_CONFIG);
    }
    let name = name.unwrap_or_else(|| format!("{role}-key"));
    let generated = api_keys::generate_key();
    let list: Vec<String> = workspaces.iter().map(|w| toml_string(w)).collect();
    let entry = format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nname = {}\nhash = \"{}\"\nworkspaces = [{}]\nrole = \"{role}\"\n",
        generated.id,
        toml_string(&name),
        generated.hash,
        list.join(", ")
    );
    if let Some(data_dir) = data_dir {
        return match setup::append_to_config(&data_dir, &entry) {
            Ok(()) => {
                println!("# The admin key, shown once; only its hash is in the config.");
                println!("{PICKED_UP}");
                println!("export SQSGW_ADMIN_KEY={}", generated.key);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("cannot add a key: {error}");
                ExitCode::from(EXIT_CONFIG)
            }
        };
    }
    println!("# The admin key, shown once; keep it in a secret store:");
    println!("#   {}", generated.key);
    print!("{entry}");
    ExitCode::SUCCESS
}

/// Prints a new basaltic key once, and its config entry (or adds it to a data directory's
/// config). Grants read `QUEUE=PERMISSION,…`.
pub(super) fn new_basaltic_key(
    grants: &[String],
    name: Option<String>,
    data_dir: Option<PathBuf>,
) -> ExitCode {
    let mut table = Vec::new();
    let defaults = ["*=*".to_owned()];
    let grants = if grants.is_empty() {
        &defaults[..]
    } else {
        grants
    };
    for grant in grants {
        let Some((queue, permissions)) = grant.split_once('=') else {
            eprintln!("--grant takes QUEUE=PERMISSION,… (got `{grant}`)");
            return ExitCode::from(EXIT_CONFIG);
        };
        let permissions: Vec<String> = permissions
            .split(',')
            .filter(|permission| !permission.is_empty())
            .map(toml_string)
            .collect();
        table.push(format!(
            "{} = [{}]",
            toml_string(queue),
            permissions.join(", ")
        ));
    }
    let generated = api_keys::generate_key();
    let name = name.unwrap_or_else(|| "basaltic".to_owned());
    let entry = format!(
        "[[basaltic.keys]]\nid = \"{}\"\nname = {}\nhash = \"{}\"\ngrants = {{ {} }}\n",
        generated.id,
        toml_string(&name),
        generated.hash,
        table.join(", ")
    );
    // The entry must be one the gateway takes (known permissions, queue UUIDs).
    let parsed = toml::from_str::<sqs_gateway::api::basaltic::config::BasalticConfig>(
        &entry.replace("[[basaltic.keys]]", "[[keys]]"),
    );
    let checked = parsed
        .map_err(|error| error.to_string())
        .and_then(|config| config.validate().map_err(|error| error.to_string()));
    if let Err(error) = checked {
        eprintln!("the key does not fit: {error}");
        return ExitCode::from(EXIT_CONFIG);
    }
    if let Some(data_dir) = data_dir {
        return match setup::append_to_config(&data_dir, &entry) {
            Ok(()) => {
                println!("# The basaltic key, shown once; only its hash is in the config.");
                println!("{PICKED_UP}");
                println!("export BASALTIC_API_KEY={}", generated.key);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("cannot add a key: {error}");
                ExitCode::from(EXIT_CONFIG)
            }
        };
    }
    println!("# The basaltic key, shown once; give it to the client and keep it nowhere else:");
    println!("#   {}", generated.key);
    print!("{entry}");
    ExitCode::SUCCESS
}

/// What a key added to a data directory's config is told: no restart needed.
const PICKED_UP: &str = "# A running gateway picks it up within server.config_check_seconds (2 s by default),\n\
                         # or at once on `kill -HUP <its pid>`; a stopped one at its next start.";

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
