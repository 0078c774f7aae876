//! The zero-config start, through the binary: a data directory whose config is gone is refused
//! (its keys kept), the directory's permissions are left as they are, and the banner's lines
//! work when pasted into a shell, with no key in them (they read the keys from their files).

use crate::binary::{BIN, EZGH_BIN, Running, run_to_exit};
use sqs_gateway::setup::{
    API_KEY_FILE, BASALTIC_KEY_FILE, CONFIG_FILE, RECEIPT_KEY_FILE, SQS_SECRET_FILE,
};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn serve(data: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data);
    command
}

/// Starts a zero-config gateway in `data`: the process and its banner (through its last line).
fn start(data: &Path) -> (Running, String) {
    let mut gateway = Running::spawn(serve(data));
    let banner = gateway.stdout_through("Queues:", Duration::from_secs(30));
    (gateway, banner)
}

fn stop(mut gateway: Running) {
    gateway.signal("TERM");
    let status = gateway.exit_within(Duration::from_secs(30));
    assert_eq!(status.and_then(|status| status.code()), Some(0));
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_data_directory_without_its_config_is_refused_and_its_keys_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (gateway, _) = start(&data);
    stop(gateway);
    let keys = |data: &Path| {
        [RECEIPT_KEY_FILE, SQS_SECRET_FILE].map(|name| std::fs::read(data.join(name)).unwrap())
    };
    let before = keys(&data);
    // The config moved away (a restore without it, a tidy-up): the store and keys stay.
    std::fs::rename(data.join(CONFIG_FILE), dir.path().join("moved.toml")).unwrap();
    let data_arg = data.to_str().unwrap();
    let (code, stderr) = run_to_exit(
        &["serve", "--listen", "127.0.0.1:0", "--data-dir", data_arg],
        &[],
    );
    assert_eq!(code, Some(2), "{stderr}");
    for said in [
        "holds queues.redb",
        "receipt-key, sqs-secret but no sqs-gateway.toml",
        "Restore",
        "move",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    assert_eq!(
        keys(&data),
        before,
        "the keys are neither replaced nor removed"
    );
    assert!(!data.join(CONFIG_FILE).exists(), "no new config");

    // A store alone is refused too.
    for key in [RECEIPT_KEY_FILE, SQS_SECRET_FILE] {
        std::fs::remove_file(data.join(key)).unwrap();
    }
    let (code, stderr) = run_to_exit(
        &["serve", "--listen", "127.0.0.1:0", "--data-dir", data_arg],
        &[],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("queues.redb"), "{stderr}");
    assert!(!data.join(RECEIPT_KEY_FILE).exists(), "no key was written");
}

#[test]
fn an_existing_data_directory_keeps_its_permissions_and_a_new_one_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (gateway, _) = start(&shared);
    assert_eq!(mode(&shared), 0o755, "an existing directory is not changed");
    let stderr = gateway.stderr();
    assert!(
        stderr.contains("the data directory is open to its group or to others"),
        "{stderr}"
    );
    assert_eq!(
        mode(&shared.join(SQS_SECRET_FILE)) & 0o077,
        0,
        "secrets stay private"
    );
    stop(gateway);

    let made = dir.path().join("made");
    let (gateway, _) = start(&made);
    assert_eq!(
        mode(&made),
        0o700,
        "a directory it creates is its owner's only"
    );
    assert!(
        !gateway.stderr().contains("open to its group"),
        "{}",
        gateway.stderr()
    );
    stop(gateway);
}

/// The banner's commands in a fresh shell: its `export` lines, its signed `curl` send, then the
/// ezgh CLI's receive by its bare name (the built binaries first on the `PATH`).
fn banner_script(banner: &str) -> String {
    let lines: Vec<&str> = banner.lines().map(str::trim).collect();
    let mut script: Vec<String> = lines
        .iter()
        .filter(|line| line.starts_with("export "))
        .map(|line| (*line).to_owned())
        .collect();
    let send = lines
        .iter()
        .position(|line| line.starts_with("curl") && line.contains("--aws-sigv4"))
        .expect("a signed curl send");
    let mut at = send;
    loop {
        script.push(lines[at].to_owned());
        if !lines[at].ends_with('\\') {
            break;
        }
        at += 1;
    }
    script.push(
        "[ \"$AWS_ENDPOINT_URL_SQS\" = \"$EZGH_ENDPOINT\" ]; \
         echo; echo \"region: $AWS_DEFAULT_REGION endpoint: $AWS_ENDPOINT_URL_SQS\"; echo '--- ezgh'"
            .to_owned(),
    );
    let receive = lines
        .iter()
        .find(|line| line.starts_with("ezgh queues receive"))
        .expect("the ezgh CLI's receive");
    script.push((*receive).to_owned());
    script.join("\n")
}

#[test]
fn the_first_start_banner_sets_both_regions_and_the_ezgh_cli_variables() {
    let dir = tempfile::tempdir().unwrap();
    let (gateway, banner) = start(&dir.path().join("data"));
    assert!(
        banner.contains("AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1"),
        "{banner}"
    );
    assert!(
        banner.contains("ORG_ID=local PROJECT_ID=default QUEUE_ID=orders"),
        "{banner}"
    );
    assert!(banner.contains("\n  basaltic queue list\n"), "{banner}");
    assert!(banner.contains("/console/"), "{banner}");
    // The API key is shown once, on a line of its own; the line to paste reads it from its file
    // (readable by its owner only), so the key never goes into a shell's history.
    let data = dir.path().join("data");
    let key = banner
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("sqsgw_"))
        .expect("the key is shown");
    let key_file = data.canonicalize().unwrap().join(API_KEY_FILE);
    assert_eq!(std::fs::read_to_string(&key_file).unwrap().trim(), key);
    assert_eq!(mode(&key_file), 0o600);
    assert!(
        banner.contains(&format!(
            "export SQSGW_API_KEY=\"$(cat {})\"",
            key_file.display()
        )),
        "{banner}"
    );
    for line in banner.lines().filter(|line| line.contains("export ")) {
        assert!(!line.contains(key), "a key in a line to paste: {line}");
    }
    let script = banner_script(&banner);
    let binaries = Path::new(EZGH_BIN).parent().unwrap();
    let pasted = Command::new("bash")
        .args(["-e", "-c", &script])
        .env_clear()
        .env(
            "PATH",
            format!("{}:{}", binaries.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&pasted.stdout);
    let stderr = String::from_utf8_lossy(&pasted.stderr);
    assert!(pasted.status.success(), "{script}\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("\"MD5OfMessageBody\""),
        "the send: {stdout}"
    );
    assert!(
        stdout.contains("region: us-east-1 endpoint: http://127.0.0.1:"),
        "{stdout}"
    );
    let received = stdout.split("--- ezgh").nth(1).unwrap();
    assert!(received.contains("hello"), "ezgh received: {received}");
    stop(gateway);
    // A later start shows the same line (the key itself stays unshown).
    let (gateway, banner) = start(&data);
    assert!(!banner.contains(key), "{banner}");
    assert!(
        banner.contains(&format!(
            "export SQSGW_API_KEY=\"$(cat {})\"",
            key_file.display()
        )),
        "{banner}"
    );
    stop(gateway);
}

/// `curl -s` with `args`: its standard output.
fn curl(args: &[&str]) -> String {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "curl {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The first start makes the console's sign-in: a basaltic key with every permission, in a file
/// only its owner reads (the banner names the file, never the key); a browser opening the
/// gateway's root is sent to the console.
#[test]
fn the_first_start_opens_the_console_with_its_basaltic_key() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (gateway, banner) = start(&data);
    let console = banner
        .split_whitespace()
        .find(|word| word.starts_with("http://") && word.ends_with("/console/"))
        .expect("the banner names the console")
        .to_owned();
    let base = console.trim_end_matches("/console/");
    let key_file = data.canonicalize().unwrap().join(BASALTIC_KEY_FILE);
    assert_eq!(mode(&key_file), 0o600);
    let key = std::fs::read_to_string(&key_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(key.starts_with("sqsgw_"));
    assert!(!banner.contains(&key), "the key stays in its file");
    assert!(banner.contains(&key_file.display().to_string()), "{banner}");
    let described = curl(&[
        "-H",
        &format!("Authorization: Bearer {key}"),
        &format!("{base}/v1/key"),
    ]);
    let described: serde_json::Value = serde_json::from_str(&described).unwrap();
    assert_eq!(
        described["result"]["grants"],
        serde_json::json!({ "*": ["*"] })
    );
    let page = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{redirect_url}",
        "-H",
        "Accept: text/html",
        &format!("{base}/"),
    ]);
    assert_eq!(page, format!("303 {base}/console/"));
    // An SQS client's request to the root is the SQS endpoint's, as before.
    let sqs = curl(&["-o", "/dev/null", "-w", "%{http_code}", &format!("{base}/")]);
    assert_ne!(sqs, "303");
    stop(gateway);
}
