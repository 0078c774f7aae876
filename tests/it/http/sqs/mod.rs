//! The SQS endpoint over HTTP: through the AWS SDK, its receipt handles, message content and
//! attributes, queue management, redrive (message move tasks), fidelity to AWS's recorded answers,
//! clients of every region, access policies, the 60-second rules, SigV4 signatures, tenant-scoped
//! keys, and what operators see of it.

mod access_policy;
mod fidelity;
mod fidelity_messages;
mod handles;
mod management;
mod messages;
mod observed;
mod redrive;
mod regions;
mod sdk;
mod signatures;
pub mod support;
mod tenant_scopes;
mod time_rules;
