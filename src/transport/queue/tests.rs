use super::*;
use mcp_chain_middleware::payload::BIG_PAYLOAD_BYTES;
use mcp_chain_middleware::Message;

fn ping(n: u64) -> Outgoing {
    Outgoing::One(Message::request(n, "ping", None))
}

#[tokio::test]
async fn messages_come_out_in_order_in_one_take() {
    let queue = Queue::default();
    assert!(queue.push(ping(1)) && queue.push(ping(2)));
    let mut taken = Taken::default();
    assert!(queue.take(&mut taken).await);
    let text = String::from_utf8(taken.joined()).expect("utf-8");
    let ids: Vec<_> = text.lines().map(|l| l.contains("\"id\":1")).collect();
    assert_eq!(ids, [true, false]);
}

/// A message as the proxy reads it: payloads kept as they were sent.
fn read(line: &str) -> Message {
    match mcp_chain_middleware::message::Incoming::parse(line.as_bytes()) {
        Ok(mcp_chain_middleware::message::Incoming::Single(Ok(msg))) => msg,
        other => unreachable!("a valid message: {other:?}"),
    }
}

/// A pipe that takes at most seven bytes a call, across pieces.
#[derive(Default)]
struct Trickle(Vec<u8>);

impl AsyncWrite for Trickle {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = buf.len().min(7);
        self.get_mut().0.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut n = 0;
        for buf in bufs {
            let take = buf.len().min(7 - n);
            this.0.extend_from_slice(&buf[..take]);
            n += take;
            if n == 7 {
                break;
            }
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn big_payloads_go_out_from_where_they_are_in_their_place() {
    let big = |id: u64, fill: &str| {
        let text = fill.repeat(BIG_PAYLOAD_BYTES);
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    };
    let lines = [
        big(1, "a"),
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_owned(),
        big(3, "b"),
        big(4, "c"),
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#
            .to_owned(),
    ];
    let queue = Queue::default();
    let mut expected = Vec::new();
    for line in &lines {
        read(line).write_line(&mut expected);
        assert!(queue.push(Outgoing::One(read(line))));
    }
    // The big payloads count against the queue's bound.
    let waker = Waker::noop().clone();
    let payload = |line: &str| line.len() - line.find(r#""result":"#).map_or(0, |at| at + 9) - 1;
    let big_bytes: usize = [&lines[0], &lines[2], &lines[3]]
        .map(|l| payload(l))
        .iter()
        .sum();
    assert_eq!(queue.lock().parts_bytes, big_bytes);
    let mut taken = Taken::default();
    assert!(queue.take(&mut taken).await);
    assert_eq!(taken.parts.len(), 3, "each big payload is handed over");
    assert!(taken.bytes.len() < 1024, "and not copied");
    assert_eq!(taken.joined(), expected);
    assert!(queue
        .poll_ready(&mut Context::from_waker(&waker))
        .is_ready());
    // Written in order, however little each write takes, with writev
    // or without.
    let mut out = Trickle::default();
    taken.write_to(&mut out).await.expect("written");
    assert_eq!(out.0, expected);
    let (mut tx, mut rx) = tokio::io::duplex(13);
    let reader = tokio::spawn(async move {
        let mut all = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut rx, &mut all)
            .await
            .map(|_| all)
    });
    taken.write_to(&mut tx).await.expect("written");
    drop(tx);
    assert_eq!(reader.await.expect("joined").expect("read"), expected);
}

#[tokio::test]
async fn a_full_queue_is_not_ready_until_taken() {
    let queue = Queue::default();
    let big = Outgoing::One(Message::request(
        1,
        "x",
        Some(serde_json::json!({"pad": "p".repeat(MAX_QUEUED_BYTES)})),
    ));
    assert!(queue.push(big));
    let waker = Waker::noop().clone();
    assert!(queue
        .poll_ready(&mut Context::from_waker(&waker))
        .is_pending());
    let mut taken = Taken::default();
    assert!(queue.take(&mut taken).await);
    assert!(queue
        .poll_ready(&mut Context::from_waker(&waker))
        .is_ready());
}

#[tokio::test]
async fn close_drains_then_ends_and_refuses_pushes() {
    let queue = Queue::default();
    assert!(queue.push(ping(1)));
    queue.close();
    assert!(!queue.push(ping(2)));
    let mut taken = Taken::default();
    assert!(queue.take(&mut taken).await);
    taken.clear();
    assert!(!queue.take(&mut taken).await);
}

#[test]
fn a_line_gives_its_messages_in_order() {
    let ids = |out: Outgoing| -> Vec<String> {
        out.into_messages()
            .map(|m| match m {
                Message::Request(r) => r.id.to_string(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(ids(ping(7)), ["7"]);
    let batch = (1..=3).map(|n| Message::request(n, "ping", None)).collect();
    assert_eq!(ids(Outgoing::Batch(batch)), ["1", "2", "3"]);
    assert!(ids(Outgoing::Batch(Vec::new())).is_empty());
}
