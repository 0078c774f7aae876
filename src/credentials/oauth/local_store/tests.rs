//! Unit tests of `src/credentials/oauth/local_store.rs`.

use super::*;
use crate::core::clock::SystemClock;
use crate::credentials::oauth::connection::ConnectionStatus;
use chrono::TimeZone;
use std::fs::OpenOptions;

fn connection(workspace: &str, client_id: &str) -> Connection {
    crate::credentials::oauth::connection::sample(workspace, client_id)
}

fn audit(workspace: &str, action: &str) -> AuditEntry {
    AuditEntry {
        at: Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap(),
        workspace: workspace.into(),
        actor: "test".into(),
        action: action.into(),
        client_id: "c1".into(),
        ..AuditEntry::default()
    }
}

#[test]
fn two_stores_on_one_directory_see_each_others_changes() {
    let dir = tempfile::tempdir().unwrap();
    let a = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    let b = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    a.create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    assert!(b.get("c1").unwrap().is_some());
    b.update("c1", audit("w", "connection.revoke"), |c| {
        c.status = ConnectionStatus::Revoked;
        Ok(())
    })
    .unwrap();
    assert_eq!(
        a.get("c1").unwrap().unwrap().status,
        ConnectionStatus::Revoked
    );
    a.create(
        connection("other", "c2"),
        audit("other", "connection.create"),
    )
    .unwrap();
    assert!(matches!(
        b.create(connection("w", "c1"), audit("w", "x")),
        Err(StoreError::Exists)
    ));
    let log = a.audit("w", 100, None).unwrap();
    let actions: Vec<&str> = log
        .entries
        .iter()
        .map(|entry| entry.action.as_str())
        .collect();
    assert_eq!(actions, ["connection.revoke", "connection.create"]);
    assert_eq!(a.audit("w", 1, None).unwrap().entries.len(), 1);
    // A restart reads it all back.
    drop((a, b));
    let reopened = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    assert_eq!(reopened.list("w").unwrap().len(), 1);
    assert!(
        reopened
            .remove("c1", audit("w", "connection.remove"))
            .is_ok()
    );
    assert!(reopened.get("c1").unwrap().is_none());
}

#[test]
fn the_directory_is_made_by_the_first_change_only() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("sombus");
    let store = LocalStore::open(&dir, Arc::new(SystemClock)).unwrap();
    assert!(store.get("c1").unwrap().is_none());
    assert!(store.list("w").unwrap().is_empty());
    assert!(store.audit("w", 10, None).unwrap().entries.is_empty());
    assert!(!dir.exists(), "reading makes nothing");
    store
        .create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    assert!(store.get("c1").unwrap().is_some());
}

#[test]
fn a_refused_change_writes_nothing() {
    let store = LocalStore::in_memory(Arc::new(SystemClock));
    assert!(matches!(
        store.update("nope", audit("w", "x"), |_| Ok(())),
        Err(StoreError::NotFound)
    ));
    assert!(store.audit("w", 10, None).unwrap().entries.is_empty());
}

#[test]
fn a_held_lock_makes_a_change_busy_after_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), Arc::new(SystemClock))
        .unwrap()
        .with_lock_wait(Duration::from_millis(100));
    store
        .create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    let held = File::open(dir.path().join(LOCK_FILE)).unwrap();
    held.lock().unwrap();
    assert!(matches!(
        store.remove("c1", audit("w", "connection.remove")),
        Err(StoreError::Busy)
    ));
    assert!(store.get("c1").unwrap().is_some(), "reads take no lock");
    drop(held);
    assert!(store.remove("c1", audit("w", "connection.remove")).is_ok());
}

#[test]
fn a_lost_connections_file_is_refused_and_a_fresh_directory_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    assert!(store.list("w").unwrap().is_empty(), "fresh: empty");
    store
        .create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    std::fs::remove_file(dir.path().join(CONNECTIONS_FILE)).unwrap();
    assert!(matches!(store.get("c1"), Err(StoreError::Lost(_))));
    assert!(matches!(
        store.create(connection("w", "c2"), audit("w", "connection.create")),
        Err(StoreError::Lost(_))
    ));
    assert!(
        !dir.path().join(CONNECTIONS_FILE).exists(),
        "nothing written"
    );
    let reopened = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    assert!(matches!(reopened.probe(), Err(StoreError::Lost(_))));
}

#[test]
fn a_change_whose_line_a_crash_kept_from_the_log_gets_it_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    store
        .create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    store
        .update("c1", audit("w", "connection.revoke"), |c| {
            c.status = ConnectionStatus::Revoked;
            Ok(())
        })
        .unwrap();
    // The crash: the change was renamed into place, its line never appended.
    let log = dir.path().join(AUDIT_FILE);
    let text = std::fs::read_to_string(&log).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&log, format!("{first}\n")).unwrap();
    drop(store);
    let reopened = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    let actions = |store: &LocalStore| -> Vec<String> {
        let page = store.audit("w", 10, None).unwrap();
        page.entries.into_iter().map(|entry| entry.action).collect()
    };
    assert_eq!(
        actions(&reopened),
        ["connection.revoke", "connection.create"]
    );
    drop(reopened);
    let again = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    assert_eq!(
        actions(&again),
        ["connection.revoke", "connection.create"],
        "once"
    );
}

#[test]
fn a_lookup_is_dated_by_when_the_content_was_read_whatever_the_stamp_says() {
    use crate::core::clock::ManualClock;
    let start = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), clock.clone()).unwrap();
    store
        .create(connection("w", "c1"), audit("w", "connection.create"))
        .unwrap();
    let path = dir.path().join(CONNECTIONS_FILE);
    clock.advance(chrono::Duration::seconds(3));
    // Another replica's change the stamp hides (attributes cached): same inode, size, time.
    let before = std::fs::metadata(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replace("\"status\": \"active\"", "\"status\":\"revoked\"");
    assert_eq!(changed.len(), text.len());
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    (&file).write_all(changed.as_bytes()).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    drop(file);
    // Within the store's reread time the copy is answered, dated when it was read…
    let (found, as_of) = store.lookup("c1", REREAD_AFTER).unwrap();
    assert_eq!(found.unwrap().status, ConnectionStatus::Active);
    assert_eq!(as_of, start, "as of the write, not of the lookup");
    // …and a caller that wants it fresher gets the content read now.
    let (found, as_of) = store.lookup("c1", chrono::TimeDelta::seconds(2)).unwrap();
    assert_eq!(found.unwrap().status, ConnectionStatus::Revoked);
    assert_eq!(as_of, start + chrono::Duration::seconds(3));
    // Content read again and found the same is dated anew (and not parsed again).
    clock.advance(chrono::Duration::seconds(10));
    let (_, as_of) = store.lookup("c1", REREAD_AFTER).unwrap();
    assert_eq!(as_of, start + chrono::Duration::seconds(13));
}

#[test]
fn a_create_is_finished_or_undone_only_by_its_own_instance() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    let mut creating = connection("w", "c1");
    creating.creating = true;
    store
        .create(creating.clone(), audit("w", "connection.create"))
        .unwrap();
    let cutoff = creating.created_at;
    assert_eq!(store.abandoned(cutoff).unwrap().len(), 1);
    assert!(
        store
            .abandoned(cutoff - chrono::Duration::seconds(1))
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store.finish_create("c1", "other-instance"),
        Err(StoreError::NotFound)
    ));
    let finished = store.finish_create("c1", &creating.instance).unwrap();
    assert!(!finished.creating);
    assert!(matches!(
        store.undo_create(
            "c1",
            &creating.instance,
            audit("w", "connection.create_undone")
        ),
        Err(StoreError::NotFound)
    ));
    let page = store.audit("w", 10, None).unwrap();
    assert_eq!(page.entries.len(), 1, "finishing writes no line of its own");
}
