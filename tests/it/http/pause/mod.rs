//! Pausing a queue's delivery (basaltic's `POST …/pause` and `…/resume`), whatever the dialect
//! that receives: ezgh, sombus, basaltic, the SQS endpoint and push subscriptions get nothing while
//! sends go on; a waiting receive goes on when the pause ends; the pause is audited, kept across a
//! restart and shared by replicas.

mod dialects;
mod kept;
mod support;
