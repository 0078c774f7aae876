//! AddPermission and RemovePermission: statements of the queue's kept access policy, written as
//! SQS writes them. The policy is answered, never acted on (access is the gateway's keys), and
//! over SQS a gateway key never grants AWS accounts access to the backend queue.

use super::*;
use serde_json::{Value, json};

/// A permission's label: SQS's rule.
fn valid_label(label: &str) -> bool {
    (1..=80).contains(&label.len())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// SQS's refusal of a label: it quotes the label only when it is one.
fn invalid_label(label: &str, reason: &str) -> SqsError {
    let shown = if valid_label(label) { label } else { "" };
    SqsError::invalid_parameter(format!(
        "Value {shown} for parameter Label is invalid. Reason: {reason}"
    ))
}

/// One value, or a list of several, as SQS writes a statement's principals and actions.
fn one_or_many(mut values: Vec<String>) -> Value {
    if values.len() == 1 {
        Value::String(values.remove(0))
    } else {
        json!(values)
    }
}

impl Context<'_> {
    pub(super) async fn add_permission(
        &self,
        request: wire::AddPermission,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let label = request
            .label
            .ok_or_else(|| SqsError::missing_parameter("Label"))?;
        if !valid_label(&label) {
            return Err(invalid_label(
                &label,
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.",
            ));
        }
        if request.aws_account_ids.is_empty() {
            return Err(SqsError::missing_parameter("AWSAccountIds"));
        }
        if request.actions.is_empty() {
            return Err(SqsError::missing_parameter("Actions"));
        }
        let account_shaped = |id: &String| id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit());
        if !request.aws_account_ids.iter().all(account_shaped) {
            return Err(SqsError::invalid_parameter(
                "Value for parameter AWSAccountIds is invalid. Reason: An AWS account id is 12 digits.",
            ));
        }
        let grantable = |action: &String| {
            action == "*"
                || SqsAction::named(action).is_some_and(|known| {
                    !matches!(
                        known,
                        SqsAction::AddPermission
                            | SqsAction::RemovePermission
                            | SqsAction::CreateQueue
                            | SqsAction::ListQueues
                    )
                })
        };
        if let Some(refused) = request.actions.iter().find(|action| !grantable(action)) {
            let shown = if SqsAction::named(refused).is_some() {
                refused.as_str()
            } else {
                ""
            };
            return Err(SqsError::invalid_parameter(format!(
                "Value {shown} for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."
            )));
        }
        let (arn, mut policy) = self.access_policy(&queue).await?;
        let statements = statements_of(&mut policy);
        if statements
            .iter()
            .any(|statement| statement["Sid"].as_str() == Some(label.as_str()))
        {
            return Err(invalid_label(&label, "Already exists."));
        }
        statements.push(json!({
            "Sid": label,
            "Effect": "Allow",
            "Principal": {
                "AWS": one_or_many(
                    request
                        .aws_account_ids
                        .iter()
                        .map(|id| format!("arn:aws:iam::{id}:root"))
                        .collect(),
                ),
            },
            "Action": one_or_many(request.actions.iter().map(|a| format!("SQS:{a}")).collect()),
            "Resource": arn,
        }));
        self.write_access_policy(&queue, Some(policy)).await
    }

    pub(super) async fn remove_permission(
        &self,
        request: wire::RemovePermission,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let label = request
            .label
            .ok_or_else(|| SqsError::missing_parameter("Label"))?;
        let (_, mut policy) = self.access_policy(&queue).await?;
        let statements = statements_of(&mut policy);
        let before = statements.len();
        statements.retain(|statement| statement["Sid"].as_str() != Some(label.as_str()));
        if statements.len() == before {
            return Err(invalid_label(&label, "can't find label."));
        }
        let emptied = statements.is_empty();
        self.write_access_policy(&queue, (!emptied).then_some(policy))
            .await
    }

    /// The queue's ARN as the client is shown it, and its access policy (a new, empty one when
    /// it has none). Over SQS the access policy is AWS's: refused.
    async fn access_policy(&self, queue: &str) -> Result<(String, Value), SqsError> {
        if self.gateway().made_up_arn_region().is_none() {
            return Err(SqsError::unsupported(
                "AddPermission and RemovePermission are served on the embedded engine only: over SQS a gateway key never grants AWS accounts access to the backend queue",
            ));
        }
        let resolved = self
            .gateway()
            .queue_for(&self.caller, Operation::SetQueueSettings, queue)
            .await?;
        let arn = self.arns().shown(
            resolved
                .attributes
                .arn
                .clone()
                .unwrap_or_else(|| format!("arn:aws:sqs:{}:{ACCOUNT}:{queue}", self.region)),
        );
        let policy = resolved
            .attributes
            .kept
            .get("Policy")
            .and_then(|kept| serde_json::from_str::<Value>(kept).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| {
                json!({
                    "Version": "2008-10-17",
                    "Id": format!("{arn}/SQSDefaultPolicy"),
                    "Statement": [],
                })
            });
        Ok((arn, policy))
    }

    /// Keeps `policy` as the queue's access policy (`None`: the queue has none).
    async fn write_access_policy(
        &self,
        queue: &str,
        policy: Option<Value>,
    ) -> Result<SqsAnswer, SqsError> {
        let value = policy.map(|policy| policy.to_string()).unwrap_or_default();
        wire::check_kept("Policy", &value)?;
        let mut settings = crate::core::model::QueueSettings::default();
        settings.kept.insert("Policy".to_owned(), value);
        self.gateway()
            .set_queue_settings(&self.caller, queue, &settings)
            .await?;
        Ok(SqsAnswer::nothing())
    }
}

/// The policy's statements, as a list (a policy written with one statement as an object, or
/// none, is given a list).
fn statements_of(policy: &mut Value) -> &mut Vec<Value> {
    let statements = &mut policy["Statement"];
    if !statements.is_array() {
        let single = statements.take();
        *statements = Value::Array(if single.is_null() {
            Vec::new()
        } else {
            vec![single]
        });
    }
    match statements {
        Value::Array(list) => list,
        _ => unreachable!("made a list above"),
    }
}
