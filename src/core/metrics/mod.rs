//! What the core tells its operators: the typed metrics, the backend port timed and counted, and
//! the basaltic metrics history.

pub mod metered;
pub mod meters;
pub mod sample_history;
