//! Unit tests of `src/backend/sqs/mod.rs`.

use super::*;

#[test]
fn redrive_policies_take_numbers_or_strings() {
    let arn = "arn:aws:sqs:us-east-1:000000000000:orders-dlq";
    for policy in [
        format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":3}}"#),
        format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"3"}}"#),
    ] {
        assert_eq!(
            parse_redrive_policy(&policy),
            Some(RedrivePolicy {
                dead_letter_target_arn: arn.into(),
                max_receive_count: 3
            })
        );
    }
    assert_eq!(parse_redrive_policy("{}"), None);
    assert_eq!(parse_redrive_policy("not json"), None);
}

#[test]
fn batch_answers_map_to_one_outcome_per_entry_in_order() {
    let outcomes = batch_outcomes(
        4,
        &["0".into(), "3".into()],
        &[
            ("1".into(), "ReceiptHandleIsInvalid".into()),
            ("2".into(), "MessageNotInflight".into()),
        ],
    );
    assert_eq!(
        outcomes,
        vec![
            EntryOutcome::Ok,
            EntryOutcome::Gone,
            EntryOutcome::NotInFlight,
            EntryOutcome::Ok
        ]
    );
    assert!(matches!(
        batch_outcomes(1, &[], &[])[0],
        EntryOutcome::Failed(_)
    ));
}
