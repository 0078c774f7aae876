//! Unit tests of `src/api/sqs/routes.rs`.

use super::*;
use crate::credentials::sqs_keys::SQS_ACTIONS;

/// A key granted an action by name may perform exactly what the endpoint does for it.
#[test]
fn every_grantable_action_is_an_operation_needing_that_grant() {
    for (name, action) in SQS_ACTIONS {
        let operation = operation_of(name).unwrap_or_else(|| panic!("{name} is not served"));
        assert_eq!(operation.action(), *action, "{name}");
    }
}
