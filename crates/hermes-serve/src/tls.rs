//! TLS termination with rustls (ring): the server configuration read from PEM files, and a
//! listener that hands axum only connections whose handshake finished — each handshake on a
//! task of its own with a bound, so a slow or silent client holds up no one else.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to finish its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Why the TLS files cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct TlsError {
    /// The file at fault.
    pub path: String,
    /// What is wrong with it.
    pub why: String,
}

/// The server configuration for the certificate chain in `cert` and the private key in
/// `key` (both PEM), HTTP/1.1 only.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let fail = |path: &Path, why: String| TlsError {
        path: path.display().to_string(),
        why,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| fail(cert, format!("cannot read a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(fail(cert, "no certificate in the file".into()));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| fail(key, format!("cannot read a PEM private key: {e}")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| fail(cert, e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(chain, private)
    .map_err(|e| fail(key, format!("does not fit the certificate: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Connections whose TLS handshake finished.
pub(crate) struct TlsListener {
    incoming: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `tcp`, handshaking with `config`.
    pub(crate) fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (sender, incoming) = tokio::sync::mpsc::channel(64);
        let task = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                accepted(&stream);
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = sender.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            incoming,
            local,
            task,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What every accepted connection gets, plain or TLS: `TCP_NODELAY`, so a streamed event (a
/// few hundred bytes) leaves at once instead of waiting, by Nagle's algorithm, for the client to
/// acknowledge the previous one (up to its delayed-ACK timer, 40 ms on Linux).
pub(crate) fn accepted(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(accepted) => accepted,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    /// Both listeners call [`super::accepted`] on every connection they accept (`Gateway::serve`
    /// through axum's `tap_io`, [`super::TlsListener`] before the handshake); it leaves the
    /// socket with `TCP_NODELAY` on, which sockets do not have by default.
    #[tokio::test]
    async fn an_accepted_connection_is_set_to_send_without_nagle_delay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let (stream, _) = accepted.unwrap();
        assert!(!stream.nodelay().unwrap(), "off by default");
        super::accepted(&stream);
        assert!(stream.nodelay().unwrap());
        drop(client);
    }
}
