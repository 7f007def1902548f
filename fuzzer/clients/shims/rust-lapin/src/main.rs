// The lapin client shim: the 0-9-1 shim contract in fuzzer/clients/shims/__init__.py.
//
// Built with cargo against lapin from crates.io (its tokio runtime, no TLS). One process runs
// every case, one connection each, on one tokio runtime (two worker threads).
//
// Clean outcomes are the lapin::Error values its calls, its consumer stream and its
// connection events return: a connection.close the server sent is `closed` by server, an I/O
// error `closed` by socket, anything else (a protocol violation lapin found itself and closed
// the connection for, a channel.close from the server, a parsing error, ...) `error` with the
// lapin::ErrorKind variant as its class. A panic anywhere -- in the shim, in lapin, in any
// thread or tokio task -- prints its message and a backtrace and aborts the process: a crash.
//
// What lapin cannot show: the server's properties (connection.start's server-properties are
// read and dropped), so `server_properties` is always {}; a connection.close's reply text when
// its code is 200 or a code lapin does not know (then `text` is null); basic.return outside a
// publish awaiting its confirm (lapin hands a return over with the confirm it precedes).
// lapin's own error type does not say whether the server closed the connection or lapin did
// (both are a ProtocolError): the shim tells them apart by lapin's log event for a
// connection.close received (a tracing subscriber that keeps only that event).
// Heartbeats: the URL asks for none, but lapin takes up the server's when the server proposes one.
// Header values: strings as text (bytes that are not UTF-8, or text starting "hex:", as
// "hex:..."), byte arrays "hex:...", decimals "<value>E-<scale>", timestamps integer seconds,
// a float JSON cannot carry as its text, void null.

mod common;

use futures_lite::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicPublishOptions,
    ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::message::Delivery;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Confirmation, Connection, ConnectionProperties, ErrorKind};
use common::{emit, float, hex};
use serde_json::{json, Map, Value};
use std::sync::Mutex;
use std::time::Duration;

const QUEUE: &str = "amqpfuzz-shim";
const NAME: &str = "lapin";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The reply code of the last connection.close lapin received (its log event says so).
static SERVER_CLOSE: Mutex<Option<Option<u16>>> = Mutex::new(None);

/// A string's octets as text, or as "hex:..." when text would not carry them back.
fn octets(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with("hex:") => json!(text),
        _ => json!(format!("hex:{}", hex(bytes))),
    }
}

/// A header table's value as JSON (the file's comment says how).
fn jsonable(value: &AMQPValue) -> Value {
    match value {
        AMQPValue::Boolean(b) => json!(b),
        AMQPValue::ShortShortInt(n) => json!(n),
        AMQPValue::ShortShortUInt(n) => json!(n),
        AMQPValue::ShortInt(n) => json!(n),
        AMQPValue::ShortUInt(n) => json!(n),
        AMQPValue::LongInt(n) => json!(n),
        AMQPValue::LongUInt(n) => json!(n),
        AMQPValue::LongLongInt(n) => json!(n),
        AMQPValue::Float(f) => float(*f as f64),
        AMQPValue::Double(f) => float(*f),
        AMQPValue::DecimalValue(d) => json!(format!("{}E-{}", d.value, d.scale)),
        AMQPValue::ShortString(s) => octets(s.as_str().as_bytes()),
        AMQPValue::LongString(s) => octets(s.as_bytes()),
        AMQPValue::FieldArray(a) => Value::Array(a.as_slice().iter().map(jsonable).collect()),
        AMQPValue::Timestamp(t) => json!(t),
        AMQPValue::FieldTable(t) => table(t),
        AMQPValue::ByteArray(b) => json!(format!("hex:{}", hex(b.as_slice()))),
        AMQPValue::Void => Value::Null,
    }
}

fn table(t: &FieldTable) -> Value {
    let mut m = Map::new();
    for (k, v) in t {
        m.insert(k.as_str().to_string(), jsonable(v));
    }
    Value::Object(m)
}

/// The properties present, by the specification's names.
fn properties(p: &BasicProperties) -> Value {
    let mut m = Map::new();
    let strings = [
        ("content-type", p.content_type()),
        ("content-encoding", p.content_encoding()),
        ("correlation-id", p.correlation_id()),
        ("reply-to", p.reply_to()),
        ("expiration", p.expiration()),
        ("message-id", p.message_id()),
        ("type", p.kind()),
        ("user-id", p.user_id()),
        ("app-id", p.app_id()),
        ("cluster-id", p.cluster_id()),
    ];
    for (name, value) in strings {
        if let Some(s) = value {
            m.insert(name.into(), octets(s.as_str().as_bytes()));
        }
    }
    if let Some(h) = p.headers() {
        m.insert("headers".into(), table(h));
    }
    if let Some(n) = p.delivery_mode() {
        m.insert("delivery-mode".into(), json!(n));
    }
    if let Some(n) = p.priority() {
        m.insert("priority".into(), json!(n));
    }
    if let Some(t) = p.timestamp() {
        m.insert("timestamp".into(), json!(t));
    }
    Value::Object(m)
}

fn message(case: u64, via: &str, channel: u16, d: &Delivery, tagged: bool) {
    let (tag, redelivered) = if tagged {
        (json!(d.delivery_tag), json!(d.redelivered))
    } else {
        (Value::Null, Value::Null) // basic.return has neither
    };
    emit(
        "message",
        case,
        json!({"via": via, "channel": channel, "delivery_tag": tag, "redelivered": redelivered,
               "exchange": octets(d.exchange.as_str().as_bytes()),
               "routing_key": octets(d.routing_key.as_str().as_bytes()),
               "body": hex(&d.data), "properties": properties(&d.properties)}),
    );
}

/// The connection.close lapin received: lapin logs it (tracing, target lapin::channel, message
/// "Connection closed", the method in its `method` field); this subscriber keeps that only.
struct CloseSpy;

struct Fields {
    message: String,
    method: String,
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "method" => self.method = format!("{value:?}"),
            _ => {}
        }
    }
}

impl tracing::Subscriber for CloseSpy {
    fn enabled(&self, meta: &tracing::Metadata<'_>) -> bool {
        meta.is_event() && meta.target().starts_with("lapin") && *meta.level() <= tracing::Level::INFO
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields { message: String::new(), method: String::new() };
        event.record(&mut fields);
        if fields.message == "Connection closed" && !fields.method.is_empty() {
            // the method's Debug: `Close { reply_code: 320, reply_text: ..., ... }`
            let code = fields.method.split("reply_code: ").nth(1).and_then(|rest| {
                rest.split(|c: char| !c.is_ascii_digit()).next()?.parse::<u16>().ok()
            });
            *SERVER_CLOSE.lock().unwrap() = Some(code);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// How a case ended on an error (or with the connection gone and no error told).
fn ended(case: u64, err: Option<lapin::Error>) {
    let server = SERVER_CLOSE.lock().unwrap().take();
    if let Some(code) = server {
        let text = match err.as_ref().map(|e| e.kind()) {
            Some(ErrorKind::ProtocolError(e)) if Some(e.get_id()) == code => {
                json!(e.get_message().as_str())
            }
            _ => Value::Null, // lapin keeps no text for a 200 or a code it does not know
        };
        emit("closed", case, json!({"by": "server", "code": code, "text": text}));
        return;
    }
    match err {
        Some(e) if e.is_io_error() => {
            emit("closed", case, json!({"by": "socket", "code": null, "text": e.to_string()}))
        }
        Some(e) => {
            let code = match e.kind() {
                ErrorKind::ProtocolError(p) => json!(p.get_id()),
                _ => Value::Null,
            };
            let kind = format!("{:?}", e.kind());
            let class = kind.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
            emit(
                "error",
                case,
                json!({"class": format!("lapin::ErrorKind::{class}"), "code": code, "message": e.to_string()}),
            );
        }
        None => emit("closed", case, json!({"by": "socket", "code": null, "text": null})),
    }
}

enum End {
    Lingered,
    Failed(Option<lapin::Error>),
}

async fn session(url: &str, case: u64, linger: Duration, held: &mut Option<Connection>) -> End {
    // heartbeats off; lapin's own TCP connect timeout, and the handshake's under the same bound
    let sep = if url.contains('?') { '&' } else { '?' };
    let uri = format!("{url}{sep}heartbeat=0&connection_timeout={}", CONNECT_TIMEOUT.as_millis());
    let conn = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        Connection::connect(&uri, ConnectionProperties::default()),
    )
    .await
    {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return End::Failed(Some(e)),
        Err(elapsed) => {
            emit("error", case, json!({"class": "TimeoutError", "code": null, "message": elapsed.to_string()}));
            return End::Failed(None);
        }
    };
    let mut events = conn.events_listener();
    *held = Some(conn);
    let conn = held.as_ref().unwrap();
    emit("connected", case, json!({"server_properties": {}})); // lapin does not keep them
    let ch = match conn.create_channel().await {
        Ok(ch) => ch,
        Err(e) => return End::Failed(Some(e)),
    };
    let id = ch.id();
    emit("channel", case, json!({"channel": id}));
    macro_rules! attempt {
        ($call:expr) => {
            match $call.await {
                Ok(v) => v,
                Err(e) => return End::Failed(Some(e)),
            }
        };
    }
    attempt!(ch.confirm_select(ConfirmSelectOptions::default()));
    let q = attempt!(ch.queue_declare(QUEUE.into(), QueueDeclareOptions::default(), FieldTable::default()));
    emit(
        "declared",
        case,
        json!({"queue": q.name().as_str(), "message_count": q.message_count(), "consumer_count": q.consumer_count()}),
    );
    // the shim names the consumer, as the Go shim does
    let tag = format!("amqpfuzz-shim-{}-{case}", std::process::id());
    let mut consumer = attempt!(ch.basic_consume(
        QUEUE.into(),
        tag.as_str().into(),
        BasicConsumeOptions::default(),
        FieldTable::default()
    ));
    emit("consuming", case, json!({"tag": tag}));
    let mut headers = FieldTable::default();
    headers.insert("shim".into(), AMQPValue::LongString(NAME.into()));
    let props = BasicProperties::default()
        .with_content_type("text/plain".into())
        .with_delivery_mode(1)
        .with_headers(headers);
    let body = format!("amqpfuzz-shim-{case}");
    let mandatory = BasicPublishOptions { mandatory: true, ..BasicPublishOptions::default() };
    let confirm = attempt!(ch.basic_publish("".into(), QUEUE.into(), mandatory, body.as_bytes(), props));
    let confirmation = attempt!(confirm);
    let ack = confirmation.is_ack();
    let requested = !matches!(confirmation, Confirmation::NotRequested);
    if let Some(back) = confirmation.take_message() {
        message(case, "return", id, &back.delivery, false);
    }
    emit("confirm", case, json!({"ack": if requested { json!(ack) } else { Value::Null }}));
    match attempt!(ch.basic_get(QUEUE.into(), BasicGetOptions::default())) {
        Some(got) => {
            message(case, "get", id, &got.delivery, true);
            attempt!(got.delivery.ack(BasicAckOptions::default()));
        }
        None => emit("get-empty", case, json!({})),
    }
    // every delivery and the consumer's cancel until the connection ends or --linger passes;
    // the connection's state is looked at now and then, as lapin may end it without an event
    let deadline = tokio::time::Instant::now() + linger;
    let mut consuming = true;
    let mut listening = true;
    let mut looks = tokio::time::interval(Duration::from_millis(50));
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return End::Lingered,
            item = consumer.next(), if consuming => match item {
                Some(Ok(d)) => {
                    message(case, "deliver", id, &d, true);
                    if let Err(e) = d.ack(BasicAckOptions::default()).await {
                        return End::Failed(Some(e));
                    }
                }
                Some(Err(e)) => return End::Failed(Some(e)), // the stream's end follows
                None => {
                    consuming = false; // the server's basic.cancel (an error comes first)
                    emit("cancelled", case, json!({"tag": tag}));
                }
            },
            event = events.next(), if listening => match event {
                Some(lapin::Event::Error(e)) => return End::Failed(Some(e)),
                Some(_) => {}
                None => listening = false,
            },
            _ = looks.tick() => {
                let status = conn.status();
                if status.closed() || status.errored() || !ch.status().connected() {
                    // lapin tells the error as an event just after: collected, not awaited long
                    let told = tokio::time::timeout(Duration::from_millis(500), async {
                        while let Some(event) = events.next().await {
                            if let lapin::Event::Error(e) = event {
                                return Some(e);
                            }
                        }
                        None
                    });
                    return End::Failed(if listening { told.await.ok().flatten() } else { None });
                }
            }
        }
    }
}

async fn run_case(url: &str, case: u64, linger: Duration) {
    emit("connecting", case, json!({}));
    *SERVER_CLOSE.lock().unwrap() = None;
    let mut held = None;
    match session(url, case, linger, &mut held).await {
        End::Lingered => {
            let conn = held.take().unwrap();
            match conn.close(200, "".into()).await {
                Ok(()) => emit("closed", case, json!({"by": "client", "code": null, "text": null})),
                Err(e) => ended(case, Some(e)),
            }
        }
        End::Failed(None) if held.is_none() => {} // the connect timeout: said already
        End::Failed(err) => ended(case, err),
    }
    // a connection still open after an error: closed in the background, not waited for
    if let Some(conn) = held {
        if conn.status().connected() {
            tokio::spawn(async move {
                let _ = conn.close(200, "".into()).await;
            });
        }
    }
}

fn main() {
    let args = common::start(NAME);
    tracing::subscriber::set_global_default(CloseSpy).expect("one subscriber");
    common::cases(args.once, |case| run_case(&args.url, case, args.linger));
}
