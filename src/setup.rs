//! The zero-config start: `sqs-gateway serve` with no config file runs the embedded backend in a
//! data directory, with example queues and freshly generated credentials, and says how to use them.

use crate::core::handle::Keyring;
use crate::credentials::api_keys;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Name of the generated config inside the data directory.
pub const CONFIG_FILE: &str = "sqs-gateway.toml";
/// Name of the receipt-handle key file inside the data directory.
pub const RECEIPT_KEY_FILE: &str = "receipt-key";
/// The ezgh organization and project of the generated config.
pub const ORGANIZATION: &str = "local";
/// The ezgh project of the generated config.
pub const PROJECT: &str = "default";

/// Name of the SQS endpoint's secret file inside the data directory.
pub const SQS_SECRET_FILE: &str = "sqs-secret";

/// Name of the file a first start keeps its consumer API key in (readable by its owner only),
/// so the banner's `export` line reads it from there instead of putting the key in a shell's
/// history.
pub const API_KEY_FILE: &str = "api-key";

/// Name of the file a first start keeps its basaltic key in (every permission on every queue:
/// the web console's sign-in), readable by its owner only; the config keeps only its hash.
pub const BASALTIC_KEY_FILE: &str = "basaltic-key";

/// What a first start generated; the API key is shown once and never stored in clear.
///
/// The secret files are written when it is made, but not the config: [`FirstRun::persist`] writes
/// that once the gateway listens, so a first start that fails (a port in use, say) leaves no
/// config behind whose key nobody saw, and the next start generates a fresh one.
pub struct FirstRun {
    /// Where the config goes.
    pub config_path: PathBuf,
    /// The generated config.
    pub config_text: String,
    /// The consumer API key (shown once, stored hashed).
    pub api_key: String,
    /// The SQS endpoint's access key id and secret (the secret is kept in the data directory,
    /// readable by its owner only: SigV4 verification needs it).
    pub sqs_access_key_id: String,
    /// The SQS secret (kept in a 0600 file, never printed).
    pub sqs_secret: String,
}

impl std::fmt::Debug for FirstRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstRun")
            .field("sqs_access_key_id", &self.sqs_access_key_id)
            .finish_non_exhaustive()
    }
}

/// How a zero-config start finds its data directory.
#[derive(Debug)]
pub enum Prepared {
    /// A config from an earlier start.
    Existing(PathBuf),
    /// A first start: the config to persist once the gateway listens.
    First(FirstRun),
}

impl FirstRun {
    /// Writes the generated config (only its owner can read it); the first start is then
    /// finished, and what it wrote is kept from now on.
    pub fn persist(&self) -> Result<(), String> {
        write_private(&self.config_path, &self.config_text)?;
        if let Some(data_dir) = self.config_path.parent() {
            let _ = std::fs::remove_file(data_dir.join(FIRST_START_FILE));
        }
        Ok(())
    }
}

/// Name of the embedded engine's store inside the data directory (the engine's own name for it).
pub const STORE_FILE: &str = "queues.redb";
/// Name of the sombus credential store inside the data directory.
pub const SOMBUS_DIR: &str = "sombus";
/// Marks a first start that has written its keys but not yet its config: what it leaves behind
/// (keys, an empty store) may be replaced by the next start.
pub const FIRST_START_FILE: &str = "first-start-unfinished";

/// Why a data directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// It holds a store or keys but no config: a generated config would replace the keys that
    /// the data was made with. The gateway refuses to start (a config error, exit code 2).
    #[error("{0}")]
    DataWithoutConfig(String),
    /// The filesystem refused: it cannot be created, read or written.
    #[error("{0}")]
    Io(String),
}

/// The config for `data_dir`: an earlier start's, or a new one (with fresh secrets) to persist.
///
/// Keys are never replaced over data: a directory holding a store or key files but no config is
/// refused, unless they are the leftovers of a first start that stopped before saving its config
/// (marked by [`FIRST_START_FILE`]). A directory this creates is made readable by its owner only;
/// an existing one keeps its permissions (a warning is logged when others may read it).
pub fn prepare(data_dir: &Path) -> Result<Prepared, PrepareError> {
    open_data_dir(data_dir)?;
    let data_dir = data_dir
        .canonicalize()
        .map_err(|e| PrepareError::Io(format!("cannot resolve {}: {e}", data_dir.display())))?;
    let config_path = data_dir.join(CONFIG_FILE);
    let unfinished = data_dir.join(FIRST_START_FILE);
    if config_path.exists() {
        // A first start that saved its config but stopped before removing its marker: the
        // marker must not outlive it (it would let a start without the config replace the keys).
        let _ = std::fs::remove_file(&unfinished);
        return Ok(Prepared::Existing(config_path));
    }
    if !unfinished.exists() {
        refuse_data_without_config(&data_dir)?;
        write_private(&unfinished, FIRST_START_NOTE).map_err(PrepareError::Io)?;
    }
    let key_path = data_dir.join(RECEIPT_KEY_FILE);
    let sqs_secret_path = data_dir.join(SQS_SECRET_FILE);
    // Leftovers of a first start that stopped before writing its config are replaced (and an
    // API key file whose config is gone names a key no config holds).
    for leftover in [
        &key_path,
        &sqs_secret_path,
        &data_dir.join(API_KEY_FILE),
        &data_dir.join(BASALTIC_KEY_FILE),
    ] {
        let _ = std::fs::remove_file(leftover);
    }
    first_run(&data_dir, config_path, &key_path, &sqs_secret_path).map_err(PrepareError::Io)
}

/// What the marker of an unfinished first start says to whoever finds it.
const FIRST_START_NOTE: &str = "A first start of sqs-gateway in this directory has not saved its \
config yet: the next start replaces its keys. Removed once the config is saved.\n";

/// Creates the data directory (owner only) or uses an existing one as it is.
fn open_data_dir(data_dir: &Path) -> Result<(), PrepareError> {
    match std::fs::metadata(data_dir) {
        Ok(meta) if meta.is_dir() => {
            warn_if_open(data_dir, &meta);
            Ok(())
        }
        Ok(_) => Err(PrepareError::Io(format!(
            "{} is not a directory",
            data_dir.display()
        ))),
        Err(_) => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(data_dir)
                .map_err(|e| PrepareError::Io(format!("cannot create {}: {e}", data_dir.display())))
        }
    }
}

/// Logs a warning when an existing data directory is open to its group or to others: it holds
/// the keys (each in a file only its owner reads) and, with the embedded engine, the messages.
fn warn_if_open(data_dir: &Path, meta: &std::fs::Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                data_dir = %data_dir.display(),
                mode = format!("{mode:o}"),
                "the data directory is open to its group or to others; it holds the gateway's keys \
                 and messages (`chmod 700` it, or use a directory of its own)"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (data_dir, meta);
}

/// Refuses a directory that holds a store or keys but no config, saying what is there and how to
/// recover.
fn refuse_data_without_config(data_dir: &Path) -> Result<(), PrepareError> {
    let found: Vec<String> = [STORE_FILE, SOMBUS_DIR, RECEIPT_KEY_FILE, SQS_SECRET_FILE]
        .into_iter()
        .filter(|name| data_dir.join(name).exists())
        .map(|name| match name {
            SOMBUS_DIR => format!("{name}/"),
            _ => name.to_owned(),
        })
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    Err(PrepareError::DataWithoutConfig(format!(
        "{dir} holds {found} but no {CONFIG_FILE}: a new config would replace its keys, and every \
         receipt handle, sombus token and SQS secret in use would stop working. Restore \
         {dir}/{CONFIG_FILE} (from a backup) to go on with this data, or move {dir} away to start \
         afresh",
        dir = data_dir.display(),
        found = found.join(", "),
    )))
}

/// A first start's fresh secrets (written now) and its config (written by [`FirstRun::persist`]).
fn first_run(
    data_dir: &Path,
    config_path: PathBuf,
    key_path: &Path,
    sqs_secret_path: &Path,
) -> Result<Prepared, String> {
    write_private(key_path, &Keyring::generate_key())?;
    let generated = api_keys::generate_key();
    let sqs_access_key_id = format!(
        "AKGW{}",
        random_text(16, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    );
    let sqs_secret = random_text(
        40,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    );
    write_private(sqs_secret_path, &sqs_secret)?;
    write_private(
        &data_dir.join(API_KEY_FILE),
        &format!("{}\n", generated.key),
    )?;
    let console = api_keys::generate_key();
    write_private(
        &data_dir.join(BASALTIC_KEY_FILE),
        &format!("{}\n", console.key),
    )?;
    let config = format!(
        r#"# Generated by `sqs-gateway serve` on its first start in this directory; edit freely.
# The API key was shown once on that start; only its hash is kept here (the key itself is in
# {API_KEY_FILE} beside this file, readable by you only: delete it once you keep the key elsewhere).

[server]
listen = "127.0.0.1:8787"

[backend]
kind = "embedded"
data_dir = {data_dir}

[queues.orders]
dead_letter_queue = "orders-dlq"
max_receive_count = 5

[queues.orders-dlq]

[queues."jobs.fifo"]
content_based_deduplication = true
dead_letter_queue = "jobs-dlq.fifo"
max_receive_count = 5

[queues."jobs-dlq.fifo"]

[[receipt_keys]]
id = 1
secret_file = {key_path}

[ezgh.organizations.{ORGANIZATION}.projects.{PROJECT}]
queues = {{ orders = "orders", orders-dlq = "orders-dlq", jobs = "jobs.fifo", jobs-dlq = "jobs-dlq.fifo" }}
# Any other queue id names the queue of that name (made with the SQS endpoint or basaltic).
all_queues = true

# basaltic names every queue above and every one made later, under an id derived from its name.
[basaltic]
all_queues = true

# The web console's sign-in (and the basaltic CLI's): every permission on every queue. The key is
# in {BASALTIC_KEY_FILE} beside this file, readable by you only; only its hash is kept here.
[[basaltic.keys]]
id = "{console_id}"
name = "console"
hash = "{console_hash}"
grants = {{ "*" = ["*"] }}

[[api_keys]]
id = "{id}"
name = "generated"
organization = "{ORGANIZATION}"
hash = "{hash}"
grants = {{ "*" = ["queues.messages.receive"] }}

# The SQS endpoint (AWS JSON 1.0, SigV4): point AWS SDKs and the aws CLI at this gateway.
[sqs_api]
manage_queues = true

[[sqs_api.credentials]]
access_key_id = "{sqs_access_key_id}"
secret_file = {sqs_secret_path}
"#,
        data_dir = toml_path(data_dir),
        key_path = toml_path(key_path),
        id = generated.id,
        hash = generated.hash,
        console_id = console.id,
        console_hash = console.hash,
        sqs_secret_path = toml_path(sqs_secret_path),
    );
    Ok(Prepared::First(FirstRun {
        config_path,
        config_text: config,
        api_key: generated.key,
        sqs_access_key_id,
        sqs_secret,
    }))
}

/// Adds a new consumer API key to the config of a data directory, and answers the key (to be
/// shown once; only its hash is written). A running gateway picks it up when it sees the file
/// change (or on SIGHUP).
pub fn add_api_key(
    data_dir: &Path,
    organization: &str,
    name: &str,
    receive_on: &[String],
) -> Result<String, String> {
    let generated = api_keys::generate_key();
    let queues: Vec<&str> = if receive_on.is_empty() {
        vec!["*"]
    } else {
        receive_on.iter().map(String::as_str).collect()
    };
    let grants: Vec<String> = queues
        .iter()
        .map(|queue| format!("{} = [\"{}\"]", toml_string(queue), api_keys::RECEIVE))
        .collect();
    let entry = format!(
        "\n[[api_keys]]\nid = \"{}\"\nname = {}\norganization = {}\nhash = \"{}\"\ngrants = {{ {} }}\n",
        generated.id,
        toml_string(name),
        toml_string(organization),
        generated.hash,
        grants.join(", ")
    );
    append_to_config(data_dir, &entry)?;
    Ok(generated.key)
}

/// Appends an entry (a TOML array-of-tables item) to a data directory's config, checked whole
/// before it replaces the old one. Concurrent appends (several `new-*-key --data-dir` at once)
/// take turns under an exclusive lock on [`CONFIG_LOCK_FILE`], so none is lost.
pub fn append_to_config(data_dir: &Path, entry: &str) -> Result<(), String> {
    let config_path = data_dir.join(CONFIG_FILE);
    let _turn = lock_config(data_dir, &config_path)?;
    let text = std::fs::read_to_string(&config_path).map_err(|e| {
        format!(
            "cannot read {} (start the gateway in this directory once first): {e}",
            config_path.display()
        )
    })?;
    let mut updated = text.trim_end().to_owned();
    updated.push_str("\n\n");
    updated.push_str(entry);
    crate::config::Config::parse(&updated)
        .map_err(|error| format!("the new key does not fit: {error}"))?;
    // Replaced whole (a new file, named for this run alone, renamed over the old), so a crash
    // leaves one or the other.
    let staging = data_dir.join(format!(
        "{CONFIG_FILE}.{}-{:08x}.new",
        std::process::id(),
        rand::random::<u32>()
    ));
    write_private(&staging, &updated)?;
    std::fs::rename(&staging, &config_path).map_err(|e| {
        let _ = std::fs::remove_file(&staging);
        format!("cannot replace {}: {e}", config_path.display())
    })
}

/// Beside the config: held while a change to the config reads, checks and replaces it (the
/// config itself is replaced by a rename, so it can't carry the lock).
pub const CONFIG_LOCK_FILE: &str = "sqs-gateway.toml.lock";

/// Takes the config's exclusive lock (released when the file is dropped).
fn lock_config(data_dir: &Path, config_path: &Path) -> Result<std::fs::File, String> {
    let lock_path = data_dir.join(CONFIG_LOCK_FILE);
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let lock = options.open(&lock_path).map_err(|e| {
        format!(
            "cannot read {} (start the gateway in this directory once first): cannot open {}: {e}",
            config_path.display(),
            lock_path.display()
        )
    })?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    Ok(lock)
}

fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

fn random_text(length: usize, alphabet: &[u8]) -> String {
    use rand::Rng as _;
    let mut rng = rand::rng();
    (0..length)
        .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
        .collect()
}

fn toml_path(path: &Path) -> String {
    toml::Value::String(path.display().to_string()).to_string()
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The ready-to-paste commands. The consumer API key appears on the first start only; the SQS
/// secret never appears (the command reads it from its file in the data directory). Both regions'
/// variables are set: AWS CLI v1 and boto3 read `AWS_DEFAULT_REGION`, not `AWS_REGION`.
/// The ezgh CLI's variables name the generated organization, project and `orders` queue.
pub fn instructions(
    address: SocketAddr,
    config_path: &Path,
    first: Option<&FirstRun>,
    sqs_access_key_id: Option<&str>,
) -> String {
    let base = format!("http://{address}");
    let data_dir = config_path.parent().unwrap_or(config_path);
    let key_file = data_dir.join(API_KEY_FILE);
    // Read from its file, the key stays out of the shell's history (and of `ps`).
    let export_key = format!("  export SQSGW_API_KEY=\"$(cat {})\"\n", key_file.display());
    let api_key = match first {
        Some(first) => format!(
            "Your consumer API key, shown this once (the config keeps only its hash):\n  {}\n\
             Set it from its file ({}, readable by you only; delete the file once you keep the key elsewhere),\n\
             so it stays out of your shell history:\n{export_key}",
            first.api_key,
            key_file.display()
        ),
        None if key_file.exists() => format!(
            "Reusing the queues and credentials of this data directory (the consumer API key is in {}):\n{export_key}",
            key_file.display()
        ),
        None => format!(
            "Reusing the queues and credentials of this data directory (the consumer API key was shown on its first start;\n  another: sqs-gateway new-api-key --data-dir {}; the running gateway picks it up, no restart needed).\n",
            data_dir.display()
        ),
    };
    let sqs_key = match sqs_access_key_id {
        Some(id) => format!(
            "Your SQS access key (the secret stays in its file):\n  export AWS_ACCESS_KEY_ID={id} AWS_SECRET_ACCESS_KEY=\"$(cat {})\" AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ENDPOINT_URL_SQS={base}\n  (the SDKs and the aws CLI v2 then send SQS calls here; boto3 1.28.57+)\n",
            data_dir.join(SQS_SECRET_FILE).display()
        ),
        None => String::new(),
    };
    let key_line = format!("{api_key}{sqs_key}");
    let basaltic_key_file = data_dir.join(BASALTIC_KEY_FILE);
    let console = if basaltic_key_file.exists() {
        format!(
            "The web console: open {base}/console/ and sign in with the basaltic key in {file}\n  \
             (every permission on every queue; the page keeps it in that browser tab only).\n\
             The basaltic CLI takes the same key:\n  \
             export BASALTIC_API_KEY=\"$(cat {file})\" BASALTIC_ENDPOINT={base}\n  \
             basaltic queue list\n",
            file = basaltic_key_file.display()
        )
    } else {
        format!(
            "The web console ({base}/console/) and the basaltic CLI sign in with a basaltic key:\n  \
             sqs-gateway new-basaltic-key --grant '*=*' --data-dir {} (this gateway picks it up within seconds, no restart).\n",
            data_dir.display()
        )
    };
    format!(
        r#"
sqs-gateway is ready: embedded backend, config {config}
{key_line}
Send a message to `orders` through the SQS endpoint (curl 7.75+ signs with --aws-sigv4):
  curl -sS "{base}/" --aws-sigv4 "aws:amz:us-east-1:sqs" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "X-Amz-Target: AmazonSQS.SendMessage" -H "Content-Type: application/x-amz-json-1.0" \
    -d '{{"QueueUrl": "{base}/000000000000/orders", "MessageBody": "hello"}}'
  (or: aws sqs send-message --endpoint-url {base} --queue-url {base}/000000000000/orders --message-body hello)
Receive from `orders` (long poll up to 20 s):
  curl -sS -X POST "{base}/v1/organizations/{ORGANIZATION}/projects/{PROJECT}/queues/orders/messages/receive" \
    -H "Authorization: Bearer $SQSGW_API_KEY" -H "Content-Type: application/json" \
    -d '{{ "maxMessages": 10, "waitSeconds": 20, "visibilityTimeoutSeconds": 60 }}'
Extend a message you are working on (paste its receiptHandle):
  curl -sS -X POST "{base}/v1/receipts/visibility" -H "Content-Type: application/json" \
    -d '{{ "entries": [ {{ "receiptHandle": "PASTE", "visibilityTimeoutSeconds": 120 }} ] }}'
Acknowledge it when done:
  curl -sS -X POST "{base}/v1/receipts/ack" -H "Content-Type: application/json" \
    -d '{{ "receiptHandles": ["PASTE"] }}'
Or with the ezgh CLI (cargo install --path . --locked installs it beside the gateway):
  export EZGH_API_KEY="$SQSGW_API_KEY" EZGH_ENDPOINT={base} ORG_ID={ORGANIZATION} PROJECT_ID={PROJECT} QUEUE_ID=orders
  ezgh queues receive --max 10 --wait 20 --visibility-timeout 60
  ezgh queues ack PASTE
{console}Queues: orders (dead letters: orders-dlq), jobs = jobs.fifo (dead letters: jobs-dlq = jobs-dlq.fifo).
"#,
        config = config_path.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_first_start_generates_a_valid_config_and_the_second_reuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let Prepared::First(first) = prepare(dir.path()).unwrap() else {
            panic!("a first start")
        };
        let path = first.config_path.clone();
        assert!(
            !path.exists(),
            "nothing persisted before the gateway listens"
        );
        first.persist().unwrap();
        assert!(first.api_key.starts_with(api_keys::KEY_PREFIX));
        let config = Config::load(&path).unwrap();
        assert!(config.api_keys().unwrap().verify(&first.api_key).is_some());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&first.api_key), "only the hash is stored");
        let Prepared::Existing(again) = prepare(dir.path()).unwrap() else {
            panic!("a second start reuses the config")
        };
        assert_eq!(again, path);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(RECEIPT_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let address = "127.0.0.1:8787".parse().unwrap();
        let shown = instructions(address, &path, Some(&first), Some(&first.sqs_access_key_id));
        assert!(shown.contains(&first.api_key), "shown once");
        assert!(
            shown
                .lines()
                .filter(|line| line.contains("export "))
                .all(|line| !line.contains(&first.api_key)),
            "the lines to paste read the key from its file: {shown}"
        );
        let key_file = dir.path().canonicalize().unwrap().join(API_KEY_FILE);
        assert_eq!(
            std::fs::read_to_string(&key_file).unwrap().trim(),
            first.api_key
        );
        assert!(
            !shown.contains(&first.sqs_secret),
            "the SQS secret is never printed"
        );
        assert!(!instructions(address, &path, None, None).contains(&first.api_key));
    }

    #[test]
    fn keys_are_replaced_only_when_an_unfinished_first_start_left_them() {
        let dir = tempfile::tempdir().unwrap();
        let Prepared::First(unsaved) = prepare(dir.path()).unwrap() else {
            panic!("a first start")
        };
        assert!(dir.path().join(FIRST_START_FILE).exists());
        // It never saved its config: the next start replaces its keys.
        let Prepared::First(first) = prepare(dir.path()).unwrap() else {
            panic!("the leftovers are replaced")
        };
        assert_ne!(unsaved.sqs_secret, first.sqs_secret);
        first.persist().unwrap();
        assert!(!dir.path().join(FIRST_START_FILE).exists());
        std::fs::remove_file(&first.config_path).unwrap();
        let refused = prepare(dir.path()).unwrap_err();
        assert!(matches!(refused, PrepareError::DataWithoutConfig(_)));
        assert!(
            refused.to_string().contains("receipt-key, sqs-secret"),
            "{refused}"
        );
        let secret = std::fs::read_to_string(dir.path().join(SQS_SECRET_FILE)).unwrap();
        assert_eq!(secret, first.sqs_secret, "the keys are kept");
    }

    #[test]
    fn a_new_key_is_added_to_a_data_directory_and_only_its_hash_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let Prepared::First(first) = prepare(dir.path()).unwrap() else {
            panic!("a first start")
        };
        first.persist().unwrap();
        let key = add_api_key(dir.path(), ORGANIZATION, "laptop", &[]).unwrap();
        let text = std::fs::read_to_string(&first.config_path).unwrap();
        assert!(!text.contains(&key));
        let config = Config::load(&first.config_path).unwrap();
        let keys = config.api_keys().unwrap();
        assert!(keys.verify(&key).is_some(), "the new key works");
        assert!(
            keys.verify(&first.api_key).is_some(),
            "the first key still works"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(add_api_key(empty.path(), ORGANIZATION, "x", &[]).is_err());
        let unknown = add_api_key(dir.path(), "nobody", "x", &[]).unwrap_err();
        assert!(unknown.contains("organization"), "{unknown}");
        // An admin key entry after the API keys: the config stays whole and reads it.
        let admin = api_keys::generate_key();
        let entry = format!(
            "[[sombus.admin_keys]]\nid = \"{}\"\nhash = \"{}\"\nworkspaces = [\"*\"]\nrole = \"admin\"\n",
            admin.id, admin.hash
        );
        append_to_config(dir.path(), &entry).unwrap();
        let config = Config::load(&first.config_path).unwrap();
        assert!(
            config
                .sombus
                .admin_keys()
                .unwrap()
                .verify(&admin.key)
                .is_some()
        );
        assert!(config.api_keys().unwrap().verify(&key).is_some());
        assert!(append_to_config(dir.path(), "[[sombus.admin_keys]]\nid = 1\n").is_err());
    }
}
