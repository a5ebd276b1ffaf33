//! How OTLP leaves: protobuf over HTTP, sent by reqwest (the client remote
//! upstreams already use) on a thread of its own.
//!
//! The SDK's batch span processor and periodic metric reader each run on a
//! thread of their own and wait for an export with a plain `block_on`, where
//! no tokio reactor is. Each send is therefore spawned on a small runtime
//! that telemetry keeps for exports, and awaited through its join handle,
//! which any executor can wait on. Exports never run on the relay's thread:
//! a slow collector delays spans, never a message.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long one export may take before it is given up (the SDK retries
/// nothing of ours; a span batch that fails is dropped and logged).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The runtime exports run on, and its thread.
pub(super) struct Exports {
    handle: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exports {
    pub(super) fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("mcp-chain-otlp".into())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })?;
        Ok(Self {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// An HTTP client whose sends run on this runtime.
    pub(super) fn client(&self) -> Result<Sender, reqwest::Error> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(EXPORT_TIMEOUT)
            .tls_backend_rustls()
            .build()?;
        Ok(Sender {
            client,
            handle: self.handle.clone(),
        })
    }
}

impl Drop for Exports {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// OTLP's HTTP client: reqwest, on the exports' runtime.
#[derive(Clone)]
pub(super) struct Sender {
    client: reqwest::Client,
    handle: tokio::runtime::Handle,
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sender")
    }
}

type Sent<'a> = Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'a>>;

impl HttpClient for Sender {
    // The trait is written with async-trait; this is its expansion, so no
    // proc macro is built for one method.
    fn send_bytes<'life0, 'async_trait>(&'life0 self, request: Request<Bytes>) -> Sent<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let client = self.client.clone();
        let sent = self
            .handle
            .spawn(async move { client.send_bytes(request).await });
        Box::pin(async move {
            match sent.await {
                Ok(answer) => answer,
                Err(e) => Err(Box::new(e) as HttpError),
            }
        })
    }
}
