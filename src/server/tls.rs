//! TLS termination (rustls): the certificate and key come from PEM files and are re-read on SIGHUP
//! and when the files change, without dropping a connection (a handshake takes whichever pair is
//! current; open connections keep theirs). A pair that fails to load leaves the last good one in
//! place and says why in the log.

use crate::config::TlsConfig;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Why a certificate and key could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TlsError {
    file: String,
    message: String,
}

impl TlsError {
    fn new(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: file.display().to_string(),
            message: message.into(),
        }
    }
}

/// The current certificate, swapped whole on a reload.
#[derive(Debug)]
struct CurrentCertificate(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self
                .0
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        ))
    }
}

/// The TLS side of the listener: the acceptor, and the files it reloads from.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    current: Arc<CurrentCertificate>,
    provider: Arc<CryptoProvider>,
    certificate_file: PathBuf,
    private_key_file: PathBuf,
    check_every: Duration,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("certificate_file", &self.certificate_file)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Loads the configured pair; fails when it cannot be used (the gateway then does not start).
    /// With `http2`, ALPN offers `h2` before `http/1.1`.
    pub fn load(config: &TlsConfig, http2: bool) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = load_pair(
            &provider,
            &config.certificate_file,
            &config.private_key_file,
        )?;
        let current = Arc::new(CurrentCertificate(RwLock::new(Arc::new(key))));
        let mut server = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| TlsError::new(&config.certificate_file, error.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&current) as Arc<dyn ResolvesServerCert>);
        server.alpn_protocols = if http2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            current,
            provider,
            certificate_file: config.certificate_file.clone(),
            private_key_file: config.private_key_file.clone(),
            check_every: Duration::from_secs(config.reload_check_seconds),
        })
    }

    /// The acceptor new connections handshake with.
    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Re-reads the files: the new pair serves the next handshakes, or the old one stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = load_pair(
            &self.provider,
            &self.certificate_file,
            &self.private_key_file,
        )?;
        *self
            .current
            .0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(key);
        Ok(())
    }

    /// Reloads on SIGHUP and when either file's modification time or size changes, until `stop`.
    /// The SIGHUP handler is in place when this returns (a SIGHUP before it would end the process).
    pub fn watch(self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        #[cfg(unix)]
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        #[cfg(not(unix))]
        let hangup = ();
        self.watching(stop, hangup)
    }

    async fn watching(
        self,
        stop: CancellationToken,
        #[cfg(unix)] mut hangup: Option<tokio::signal::unix::Signal>,
        #[cfg(not(unix))] _hangup: (),
    ) {
        let mut seen = self.stamps();
        let mut every = tokio::time::interval(self.check_every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            #[cfg(unix)]
            let hung_up = async {
                match hangup.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let hung_up = std::future::pending::<Option<()>>();
            let why = tokio::select! {
                _ = every.tick() => {
                    let now = self.stamps();
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    "the files changed"
                }
                _ = hung_up => "SIGHUP",
                () = stop.cancelled() => return,
            };
            match self.reload() {
                Ok(()) => tracing::info!(reason = why, "TLS certificate reloaded"),
                Err(error) => {
                    tracing::error!(reason = why, %error, "TLS certificate not reloaded; the previous one stays in use");
                }
            }
        }
    }

    fn stamps(&self) -> [Option<(SystemTime, u64)>; 2] {
        let stamp = |path: &Path| {
            std::fs::metadata(path)
                .ok()
                .and_then(|meta| Some((meta.modified().ok()?, meta.len())))
        };
        [stamp(&self.certificate_file), stamp(&self.private_key_file)]
    }
}

/// Reads a certificate chain and its key, and checks that they belong together.
fn load_pair(
    provider: &CryptoProvider,
    certificate_file: &Path,
    private_key_file: &Path,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_file_iter(certificate_file)
        .map_err(|error| TlsError::new(certificate_file, error.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::new(certificate_file, error.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::new(certificate_file, "holds no PEM certificate"));
    }
    // The key's text never reaches an error: only what kind of failure it was.
    let key = PrivateKeyDer::from_pem_file(private_key_file).map_err(|error| {
        TlsError::new(
            private_key_file,
            format!("no usable private key ({})", pem_failure(&error)),
        )
    })?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|_| TlsError::new(private_key_file, "unsupported private key"))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|_| {
        TlsError::new(
            private_key_file,
            "does not belong to the certificate's public key",
        )
    })?;
    Ok(certified)
}

fn pem_failure(error: &rustls_pki_types::pem::Error) -> &'static str {
    use rustls_pki_types::pem::Error;
    match error {
        Error::NoItemsFound => "no private key in the file",
        Error::Io(_) => "cannot read the file",
        _ => "malformed PEM",
    }
}
