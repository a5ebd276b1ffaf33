//! The HTTP/1.1 requests the bench's own servers read (the fixture MCP
//! server, the shared-child floor, the OTLP sink): a request line, headers
//! up to an empty line, a `content-length` body. Only what the load
//! generator and mcp-chain send; a measuring fixture has no use for more
//! (hyper would cost the floor it is there to show).

use std::io::{self, BufRead};

/// What a server needs of a request's head.
pub struct Head {
    /// `POST`, `DELETE`, …
    pub method: String,
    /// `connection: close`: the client sends nothing after this one.
    pub close: bool,
}

/// Reads one request: its head, and its body into `body` (replaced).
/// `None` at the end of the connection. `line` is scratch space the
/// caller keeps between requests.
pub fn read_request(
    input: &mut impl BufRead,
    line: &mut String,
    body: &mut Vec<u8>,
) -> io::Result<Option<Head>> {
    line.clear();
    if input.read_line(line)? == 0 {
        return Ok(None);
    }
    let method = line.split(' ').next().unwrap_or_default().to_owned();
    let (mut length, mut close) = (0, false);
    loop {
        line.clear();
        if input.read_line(line)? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.trim().eq_ignore_ascii_case("close");
        }
    }
    body.resize(length, 0);
    input.read_exact(body)?;
    Ok(Some(Head { method, close }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_on_one_connection_are_read_in_turn() {
        let wire = b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nHost: x\r\n\r\n{}\
                     DELETE /mcp HTTP/1.1\r\nconnection: close\r\n\r\n\
                     POST /v1/traces HTTP/1.1\r\ncontent-length: 9";
        let mut input = &wire[..];
        let (mut line, mut body) = (String::new(), Vec::new());
        let first = read_request(&mut input, &mut line, &mut body).expect("read");
        let first = first.expect("a request");
        assert_eq!(
            (first.method.as_str(), first.close, &body[..]),
            ("POST", false, &b"{}"[..])
        );
        let second = read_request(&mut input, &mut line, &mut body).expect("read");
        let second = second.expect("a request");
        assert_eq!(
            (second.method.as_str(), second.close, body.len()),
            ("DELETE", true, 0)
        );
        // A head cut off by the end of the connection is no request.
        assert!(read_request(&mut input, &mut line, &mut body)
            .expect("read")
            .is_none());
    }
}
