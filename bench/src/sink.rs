//! An OTLP/HTTP collector that keeps nothing, for the `full-telemetry`
//! mode: every POST is read whole and answered 200, so mcp-chain exports
//! as it would to a real collector (the protobuf encoded, the request
//! sent) and the cost measured is mcp-chain's, not a collector's.

use mcp_chain_bench::http1::read_request;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;

/// The sink's base URL, started on first use, for the whole run.
pub(crate) fn url() -> std::io::Result<String> {
    static URL: OnceLock<String> = OnceLock::new();
    if let Some(url) = URL.get() {
        return Ok(url.clone());
    }
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = serve(stream);
            });
        }
    });
    Ok(URL.get_or_init(|| url).clone())
}

/// Answers each request of one connection with an empty 200.
fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let (mut line, mut body) = (String::new(), Vec::new());
    while read_request(&mut reader, &mut line, &mut body)?.is_some() {
        writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )?;
    }
    Ok(())
}
