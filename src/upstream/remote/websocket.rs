//! A WebSocket server: one JSON-RPC message per text frame, subprotocol
//! `mcp`, the configured headers on the upgrade request. Pings are answered
//! by the WebSocket library as frames are read; a close, or a frame over
//! `max_message_bytes`, ends the connection, and the session goes on in a
//! new one as [`link`](super::link) says.
//!
//! Device platforms carry MCP among their other frames, each message
//! wrapped as `{"session_id": …, "type": "mcp", "payload": <message>}`.
//! With `envelope = "mcp-payload"`, outgoing messages are wrapped so (with
//! the last `session_id` the server sent, once it sent one), frames of type
//! `mcp` are unwrapped, and other frames (a device's `hello`, audio state)
//! are logged and skipped. The envelope is read only as far as its `type`
//! and `session_id`: the payload is handed on as its text, and parsed once,
//! as any message.

use super::exchange::Exchange;
use super::http::{Failure, Renewals};
use super::link::{deliver, Link, Replay};
use crate::config::{Envelope, UrlConfig};
use crate::peer::Read;
use crate::upstream::StartError;
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message as Frame, Utf8Bytes};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How to reach the server, set up once.
pub(super) struct Settings {
    config: UrlConfig,
    tls: Arc<rustls::ClientConfig>,
}

/// TLS cannot be set up.
fn tls(e: impl std::fmt::Display) -> StartError {
    StartError::Client {
        what: "TLS",
        why: e.to_string(),
    }
}

impl Settings {
    pub(super) fn new(config: &UrlConfig) -> Result<Self, StartError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut extra = Vec::new();
        if let Some(path) = &config.ca_file {
            let certs =
                CertificateDer::pem_file_iter(path).map_err(|e| StartError::ca_file(path, e))?;
            for cert in certs {
                extra.push(cert.map_err(|e| StartError::ca_file(path, e))?);
            }
        }
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
                .map_err(tls)?;
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Self {
            config: config.clone(),
            tls: Arc::new(tls),
        })
    }
}

/// A connected WebSocket's sending half.
pub(super) struct WebSocket {
    sink: SplitSink<Socket, Frame>,
    envelope: Envelope,
    /// The `session_id` the server's envelopes carry, once one came.
    session: Arc<Mutex<Option<String>>>,
}

impl Link for WebSocket {
    async fn connect(
        exchange: &Arc<Exchange>,
        replay: Replay,
    ) -> Result<(Self, JoinHandle<()>), Failure> {
        let settings = exchange
            .websocket
            .as_ref()
            .ok_or_else(|| Failure::new("transport", "no WebSocket settings"))?;
        let config = &settings.config;
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::new(
                "connect",
                format!("cannot reach {}: {e}", exchange.http.shown()),
            )
        };
        let mut renewals = Renewals::default();
        let socket = loop {
            let mut request = config
                .url
                .as_str()
                .into_client_request()
                .map_err(|e| cannot(&e))?;
            let headers = request.headers_mut();
            for (name, value) in &config.headers {
                headers.append(name.clone(), value.clone());
            }
            headers.insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
            // OAuth's bearer goes on the upgrade request.
            let sent = exchange.http.authorization().await;
            if let Some(header) = &sent {
                headers.insert(AUTHORIZATION, header.clone());
            }
            let limits = WebSocketConfig::default()
                .max_message_size(Some(exchange.cap))
                .max_frame_size(Some(exchange.cap));
            let tls = Connector::Rustls(settings.tls.clone());
            match tokio_tungstenite::connect_async_tls_with_config(
                request,
                Some(limits),
                true,
                Some(tls),
            )
            .await
            {
                Ok((socket, _)) => break socket,
                Err(tungstenite::Error::Http(response)) => {
                    let status = StatusCode::from_u16(response.status().as_u16())
                        .unwrap_or(StatusCode::BAD_GATEWAY);
                    if !exchange
                        .http
                        .renewed(status, response.headers(), sent.as_ref(), &mut renewals)
                        .await?
                    {
                        return Err(cannot(&tungstenite::Error::Http(response)));
                    }
                }
                Err(e) => return Err(cannot(&e)),
            }
        };
        tracing::info!(url = %exchange.http.shown(), "relaying to a WebSocket server");
        let (sink, stream) = socket.split();
        let session = Arc::new(Mutex::new(None));
        let reading = tokio::spawn(read(
            exchange.clone(),
            stream,
            config.envelope,
            session.clone(),
            replay,
        ));
        let link = Self {
            sink,
            envelope: config.envelope,
            session,
        };
        Ok((link, reading))
    }

    async fn send(&mut self, _: &Exchange, message: Bytes) -> Result<(), Failure> {
        let message = match self.envelope {
            Envelope::None => message,
            Envelope::McpPayload => {
                let session = self
                    .session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                wrap(&message, session.as_deref())
            }
        };
        let text = Utf8Bytes::try_from(message)
            .map_err(|_| Failure::new("transport", "a message is not UTF-8"))?;
        self.sink
            .send(Frame::Text(text))
            .await
            .map_err(|e| Failure::new("transport", format!("the WebSocket failed: {e}")))
    }

    async fn close(mut self) {
        let _ = self.sink.send(Frame::Close(None)).await;
    }
}

/// A message in a device platform's envelope.
fn wrap(message: &[u8], session: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 64);
    out.extend_from_slice(b"{");
    if let Some(session) = session {
        out.extend_from_slice(b"\"session_id\":");
        let _ = serde_json::to_writer(&mut out, session);
        out.extend_from_slice(b",");
    }
    out.extend_from_slice(b"\"type\":\"mcp\",\"payload\":");
    out.extend_from_slice(message);
    out.extend_from_slice(b"}");
    Bytes::from(out)
}

/// An envelope, read as far as needed.
#[derive(Deserialize)]
struct Wrapped<'a> {
    #[serde(rename = "type")]
    kind: Option<&'a str>,
    session_id: Option<String>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
}

/// Relays the server's frames until the connection ends.
async fn read(
    exchange: Arc<Exchange>,
    mut stream: SplitStream<Socket>,
    envelope: Envelope,
    session: Arc<Mutex<Option<String>>>,
    mut replay: Replay,
) {
    while let Some(frame) = stream.next().await {
        let text = match frame {
            Ok(Frame::Text(text)) => text,
            Ok(Frame::Close(frame)) => {
                tracing::debug!(?frame, "the server closed the WebSocket");
                return;
            }
            Ok(Frame::Binary(_)) => {
                tracing::debug!("skipping a binary frame");
                continue;
            }
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "the WebSocket failed");
                return;
            }
        };
        let read = match envelope {
            Envelope::None => Read::parse(text.as_bytes()),
            Envelope::McpPayload => match serde_json::from_slice::<Wrapped<'_>>(text.as_bytes()) {
                Ok(frame) => {
                    if let Some(id) = frame.session_id {
                        *session.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
                    }
                    match (frame.kind, frame.payload) {
                        (Some("mcp"), Some(payload)) => Read::parse(payload.get().as_bytes()),
                        (kind, _) => {
                            tracing::debug!(kind, "skipping a frame that carries no MCP message");
                            continue;
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "skipping a frame that is not an envelope");
                    continue;
                }
            },
        };
        if !deliver(&exchange, read, &mut replay).await {
            return;
        }
    }
}
