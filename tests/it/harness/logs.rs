//! The log lines of the whole test process, captured once, to check what the gateway writes (and
//! never writes).

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Log lines of the whole test process, to check that no handle is ever written.
pub fn captured_logs() -> String {
    String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned()
}

pub(super) fn log_buffer() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUFFER: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUFFER.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(Arc::clone(&buffer));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(format!(
                "{},sqs_gateway=trace,tower_http=trace,{}=off",
                sqs_gateway::telemetry::DEFAULT_FILTER,
                sqs_gateway::core::spans::TARGET
            ))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init();
        buffer
    })
}

#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
