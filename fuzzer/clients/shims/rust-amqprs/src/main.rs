// The amqprs client shim: the 0-9-1 shim contract in fuzzer/clients/shims/__init__.py.
//
// Built with cargo against amqprs from crates.io (its `traces` feature, no TLS; the same source
// builds against 2.1.1 and later: 2.1.0 and older lack ConnectionCallback::secret_updated).
// One process runs every case, one connection each, on one tokio runtime (two worker threads).
//
// amqprs hands the server's asynchronous methods to callbacks (connection.close,
// channel.close, basic.cancel, basic.ack/nack, basic.return): the shim's callbacks pass them
// on to the case's loop, which also reads the consumer's deliveries. Clean outcomes: a
// connection.close the server sent is `closed` by server (during the handshake amqprs reports
// it only as its ConnectionOpenError, whose text the shim reads the code and text from); the
// socket's end (amqprs's "peer shutdown", "connection interrupted", an I/O error) `closed` by
// socket; a channel.close the server sent `error` with class amqprs::CloseChannel and its code;
// any other amqprs::error::Error a call returns, or the error amqprs's reader stopped on (a
// framing or decoding error it found itself: it then drops the socket), `error` with its
// variant as the class. After the handshake amqprs's calls only say that the connection is
// gone ("internal communication error"): the reader's own error is known from its log event
// (a tracing subscriber that keeps only that event). A panic anywhere -- in the shim, in amqprs
// (it panics on a method it does not know, on frames for a channel it has no dispatcher for,
// on a capability that is not a boolean, ...), in any thread or tokio task -- prints its
// message and a backtrace and aborts the process: a crash.
//
// What amqprs cannot show: the server's properties but product, version and cluster_name
// (it keeps those three, and reads a missing one as "unknown": left out here); basic.return's
// delivery tag and redelivered (it has neither: null); header strings that are not UTF-8 (it
// refuses them, as any short or long string that is not UTF-8, closing the socket).
// Heartbeats: amqprs cannot turn them off. Asking for 0 takes the server's interval, and when
// the server proposes 0 too it runs with an interval of 0 s, taking the server's silence for
// missed heartbeats at once and dropping the connection; so the shim asks for amqprs's
// default, 60 s: the server's interval when it is lower, 60 s when the server proposes none.
// Header values: strings as text (text starting "hex:" as "hex:..."), byte arrays "hex:...",
// decimals "<value>E-<scale>", timestamps integer seconds, a float JSON cannot carry as its
// text, void null.

mod common;

use amqprs::callbacks::{ChannelCallback, ConnectionCallback};
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicGetArguments, BasicPublishArguments, Channel,
    ConfirmSelectArguments, ConsumerMessage, QueueDeclareArguments,
};
use amqprs::connection::{Connection, OpenConnectionArguments};
use amqprs::error::Error;
use amqprs::{
    Ack, BasicProperties, Cancel, Close, CloseChannel, FieldTable, FieldValue, Nack, Return,
};
use async_trait::async_trait;
use common::{emit, float, hex};
use serde_json::{json, Map, Value};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

const QUEUE: &str = "amqpfuzz-shim";
const NAME: &str = "amqprs";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const HEARTBEAT: u16 = 60; // amqprs's default (the file's comment says why not 0)

/// The error amqprs's reader stopped on (its log event says so), the latest one.
static READER_END: Mutex<Option<String>> = Mutex::new(None);

/// A string as text, or as "hex:..." when text would read as hex.
fn text(s: &str) -> Value {
    if s.starts_with("hex:") {
        json!(format!("hex:{}", hex(s.as_bytes())))
    } else {
        json!(s)
    }
}

/// A header table's value as JSON (the file's comment says how).
fn jsonable(value: &FieldValue) -> Value {
    match value {
        FieldValue::t(b) => json!(b),
        FieldValue::b(n) => json!(n),
        FieldValue::B(n) => json!(n),
        FieldValue::s(n) => json!(n),
        FieldValue::u(n) => json!(n),
        FieldValue::I(n) => json!(n),
        FieldValue::i(n) => json!(n),
        FieldValue::l(n) => json!(n),
        FieldValue::f(f) => float(*f as f64),
        FieldValue::d(f) => float(*f),
        FieldValue::D(d) => {
            // amqprs keeps the scale and value private: its Display is `Decimal(scale, value)`
            let shown = d.to_string();
            let inner = shown.trim_start_matches("Decimal(").trim_end_matches(')');
            let (scale, digits) = inner.split_once(", ").expect("Decimal(scale, value)");
            json!(format!("{digits}E-{scale}"))
        }
        FieldValue::S(s) => text(s.as_ref()),
        FieldValue::A(a) => {
            let items: Vec<FieldValue> = a.clone().into();
            Value::Array(items.iter().map(jsonable).collect())
        }
        FieldValue::T(t) => json!(t),
        FieldValue::F(t) => table(t),
        FieldValue::V => Value::Null,
        FieldValue::x(b) => {
            let bytes: Vec<u8> = b.clone().into();
            json!(format!("hex:{}", hex(&bytes)))
        }
    }
}

fn table(t: &FieldTable) -> Value {
    let mut m = Map::new();
    for (k, v) in t.as_ref() {
        m.insert(k.as_ref().clone(), jsonable(v));
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
        ("type", p.message_type()),
        ("user-id", p.user_id()),
        ("app-id", p.app_id()),
        ("cluster-id", p.cluster_id()),
    ];
    for (name, value) in strings {
        if let Some(s) = value {
            m.insert(name.into(), text(s));
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

#[allow(clippy::too_many_arguments)]
fn message(
    case: u64,
    via: &str,
    channel: u16,
    tag: Value,
    redelivered: Value,
    exchange: &str,
    routing_key: &str,
    body: &[u8],
    props: &BasicProperties,
) {
    emit(
        "message",
        case,
        json!({"via": via, "channel": channel, "delivery_tag": tag, "redelivered": redelivered,
               "exchange": text(exchange), "routing_key": text(routing_key),
               "body": hex(body), "properties": properties(props)}),
    );
}

/// What the callbacks pass on to the case's loop.
enum Notice {
    ServerClose(u16, String),
    ChannelClose(u16, String),
    Cancelled(String),
    Confirm(bool),
    Returned(Return, BasicProperties, Vec<u8>),
}

struct ConnectionNotices(UnboundedSender<Notice>);

#[async_trait]
impl ConnectionCallback for ConnectionNotices {
    async fn close(&mut self, _: &Connection, close: Close) -> Result<(), Error> {
        let _ = self.0.send(Notice::ServerClose(close.reply_code(), close.reply_text().clone()));
        Ok(()) // amqprs answers close-ok
    }
    async fn blocked(&mut self, _: &Connection, _: String) {}
    async fn unblocked(&mut self, _: &Connection) {}
    async fn secret_updated(&mut self, _: &Connection) {}
}

struct ChannelNotices(UnboundedSender<Notice>);

#[async_trait]
impl ChannelCallback for ChannelNotices {
    async fn close(&mut self, _: &Channel, close: CloseChannel) -> Result<(), Error> {
        let _ = self.0.send(Notice::ChannelClose(close.reply_code(), close.reply_text().clone()));
        Ok(()) // amqprs answers close-ok
    }
    async fn cancel(&mut self, _: &Channel, cancel: Cancel) -> Result<(), Error> {
        let _ = self.0.send(Notice::Cancelled(cancel.consumer_tag().clone()));
        Ok(()) // amqprs answers cancel-ok (unless no-wait)
    }
    async fn flow(&mut self, _: &Channel, active: bool) -> Result<bool, Error> {
        Ok(active)
    }
    async fn publish_ack(&mut self, _: &Channel, _: Ack) {
        let _ = self.0.send(Notice::Confirm(true));
    }
    async fn publish_nack(&mut self, _: &Channel, _: Nack) {
        let _ = self.0.send(Notice::Confirm(false));
    }
    async fn publish_return(&mut self, _: &Channel, ret: Return, props: BasicProperties, body: Vec<u8>) {
        let _ = self.0.send(Notice::Returned(ret, props, body));
    }
}

/// The error amqprs's reader stops on: it logs it (tracing, target amqprs::net::reader_handler,
/// level error) just before it drops the socket; this subscriber keeps that only.
struct ReaderSpy;

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for ReaderSpy {
    fn enabled(&self, meta: &tracing::Metadata<'_>) -> bool {
        meta.is_event()
            && meta.target().starts_with("amqprs::net::reader_handler")
            && *meta.level() == tracing::Level::ERROR
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut found = Message(String::new());
        event.record(&mut found);
        if found.0.starts_with("socket will be closed") || found.0.starts_with("heartbeat was missed") {
            *READER_END.lock().unwrap() = Some(found.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// amqprs's network errors by their text (its net::Error is private): the socket's end, or the
/// variant of an error it found itself.
fn network_error(cause: &str) -> Result<&'static str, &'static str> {
    const SOCKET: [&str; 3] = ["peer shutdown", "connection interrupted", "network io error"];
    const FOUND: [(&str, &str); 4] = [
        ("framing error", "Framing"),
        ("serde error", "Serde"),
        ("internal communication error", "SyncChannel"),
        ("callback error", "Callback"),
    ];
    if SOCKET.iter().any(|s| cause.starts_with(s)) {
        return Ok("socket");
    }
    FOUND
        .iter()
        .find(|(s, _)| cause.starts_with(s))
        .map(|(_, v)| Err(*v))
        .unwrap_or(Err("Unknown"))
}

fn variant(e: &Error) -> String {
    let shown = format!("{e:?}");
    shown.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("").to_string()
}

/// A connection.close amqprs received during the handshake: its error's text carries the frame
/// (`Close { reply_code: 530, reply_text: ShortStr(5, "text"), ... }`).
fn handshake_close(message: &str) -> Option<(u16, Value)> {
    let rest = message.split("Close { reply_code: ").nth(1)?;
    let code = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let quoted = rest.split("reply_text: ShortStr(").nth(1).and_then(|r| r.split_once(", \""));
    let text = quoted.map(|(_, r)| {
        let mut out = String::new();
        let mut chars = r.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('0') => out.push('\0'),
                    Some(other) => out.push(other), // \" \\ \' (a \u{..} stays as its digits)
                    None => break,
                },
                _ => out.push(c),
            }
        }
        out
    });
    Some((code, text.map_or(Value::Null, |t| json!(t))))
}

/// How a case ended on an error: the server's connection.close or channel.close, the error
/// amqprs's reader stopped on, else the error a call returned.
fn ended(case: u64, err: Option<Error>, notices: &mut UnboundedReceiver<Notice>, opened: bool) {
    let mut channel_close = None;
    while let Ok(notice) = notices.try_recv() {
        match notice {
            Notice::ServerClose(code, reply) => {
                emit("closed", case, json!({"by": "server", "code": code, "text": reply}));
                return;
            }
            Notice::ChannelClose(code, reply) if channel_close.is_none() => {
                channel_close = Some((code, reply))
            }
            _ => {}
        }
    }
    if let Some((code, reply)) = channel_close {
        emit("error", case, json!({"class": "amqprs::CloseChannel", "code": code, "message": reply}));
        return;
    }
    let reader = if opened { READER_END.lock().unwrap().take() } else { None };
    if let Some(logged) = reader {
        let cause = logged.split("cause: ").nth(1).unwrap_or(&logged);
        match network_error(cause) {
            Ok(_) => emit("closed", case, json!({"by": "socket", "code": null, "text": cause})),
            Err(_) if logged.starts_with("heartbeat") => emit(
                "error",
                case,
                json!({"class": "HeartbeatTimeout", "code": null, "message": logged}),
            ),
            Err(kind) => emit(
                "error",
                case,
                json!({"class": format!("amqprs::net::Error::{kind}"), "code": null, "message": cause}),
            ),
        }
        return;
    }
    match err {
        Some(Error::NetworkError(cause)) if network_error(&cause).is_ok() => {
            emit("closed", case, json!({"by": "socket", "code": null, "text": cause}))
        }
        Some(Error::ConnectionOpenError(m)) if handshake_close(&m).is_some() => {
            let (code, reply) = handshake_close(&m).unwrap();
            emit("closed", case, json!({"by": "server", "code": code, "text": reply}))
        }
        Some(e) => emit(
            "error",
            case,
            json!({"class": format!("amqprs::error::Error::{}", variant(&e)), "code": null, "message": e.to_string()}),
        ),
        None => emit("closed", case, json!({"by": "socket", "code": null, "text": null})),
    }
}

/// The URL's parts: amqp://[user[:password]@]host[:port][/vhost] (percent-decoded).
fn url_arguments(url: &str) -> Option<OpenConnectionArguments> {
    fn decode(s: &str) -> Option<String> {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).ok()
    }
    let rest = url.strip_prefix("amqp://")?;
    let rest = rest.split(['?', '#']).next()?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((user, hostport)) => (Some(user), hostport),
        None => (None, authority),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() => p.parse().ok()?,
        _ => 5672,
    };
    let (username, password) = match user {
        Some(u) => match u.split_once(':') {
            Some((name, pass)) => (decode(name)?, decode(pass)?),
            None => (decode(u)?, String::new()),
        },
        None => ("guest".into(), "guest".into()),
    };
    let vhost = if path.is_empty() { "/".to_string() } else { decode(path)? };
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    let mut args = OpenConnectionArguments::new(host, port, &username, &password);
    args.virtual_host(&vhost).heartbeat(HEARTBEAT);
    Some(args)
}

/// What a case holds open: the connection and its channel.
struct Held {
    conn: Option<Connection>,
    channel: Option<Channel>,
}

enum End {
    Lingered,
    Failed(Option<Error>),
}

/// What one step of the case's loop came to.
enum Step {
    Going,
    Lingered,
    Failed(Option<Error>),
}

/// The case's state the loop steps through.
struct Case<'a> {
    case: u64,
    id: u16,
    conn: &'a Connection,
    ch: &'a Channel,
    notices: &'a mut UnboundedReceiver<Notice>,
    deliveries: Option<UnboundedReceiver<ConsumerMessage>>,
    confirmed: Option<bool>,
    looks: tokio::time::Interval,
}

impl Case<'_> {
    /// Waits for a notice, a delivery, the deadline or the connection's end (amqprs tells that
    /// by its state only: looked at now and then), then handles it.
    async fn step(&mut self, deadline: Option<tokio::time::Instant>) -> Step {
        enum Got {
            Delivery(Option<ConsumerMessage>),
            Notice(Option<Notice>),
            Look,
            Deadline,
        }
        let deliveries = &mut self.deliveries;
        let got = tokio::select! {
            biased;
            d = async { deliveries.as_mut().unwrap().recv().await }, if deliveries.is_some() => Got::Delivery(d),
            n = self.notices.recv() => Got::Notice(n),
            _ = self.looks.tick() => Got::Look,
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => Got::Deadline,
        };
        let (case, id) = (self.case, self.id);
        match got {
            Got::Delivery(Some(msg)) => {
                let d = msg.deliver.expect("a delivery's deliver");
                let props = msg.basic_properties.expect("a delivery's properties");
                let body = msg.content.expect("a delivery's content");
                message(case, "deliver", id, json!(d.delivery_tag()), json!(d.redelivered()),
                        d.exchange(), d.routing_key(), &body, &props);
                if let Err(e) = self.ch.basic_ack(BasicAckArguments::new(d.delivery_tag(), false)).await {
                    return Step::Failed(Some(e));
                }
            }
            Got::Delivery(None) => self.deliveries = None, // cancelled, or the channel is gone
            Got::Notice(Some(Notice::Confirm(ack))) => self.confirmed = Some(ack),
            Got::Notice(Some(Notice::Returned(ret, props, body))) => {
                message(case, "return", id, Value::Null, Value::Null, ret.exchange(),
                        ret.routing_key(), &body, &props);
            }
            Got::Notice(Some(Notice::Cancelled(tag))) => emit("cancelled", case, json!({"tag": tag})),
            Got::Notice(Some(closing)) => {
                // the server closed the connection or the channel: kept for `ended`; amqprs
                // marks the connection closed once the close callback has returned
                if matches!(closing, Notice::ServerClose(..)) {
                    while self.conn.is_open() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                *self.notices = requeued(closing, self.notices);
                return Step::Failed(None);
            }
            Got::Notice(None) => return Step::Failed(None),
            Got::Look => {
                if !self.conn.is_open() || !self.ch.is_open() {
                    return Step::Failed(None);
                }
            }
            Got::Deadline => return Step::Lingered,
        }
        Step::Going
    }
}

/// The notices with `first` before the rest.
fn requeued(first: Notice, rest: &mut UnboundedReceiver<Notice>) -> UnboundedReceiver<Notice> {
    let (tx, rx) = unbounded_channel();
    let _ = tx.send(first);
    while let Ok(more) = rest.try_recv() {
        let _ = tx.send(more);
    }
    rx
}

async fn session(args: &OpenConnectionArguments, case: u64, linger: Duration, held: &mut Held,
                 notices: &mut UnboundedReceiver<Notice>, tx: UnboundedSender<Notice>) -> End {
    let conn = match tokio::time::timeout(CONNECT_TIMEOUT, Connection::open(args)).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => return End::Failed(Some(e)),
        Err(elapsed) => {
            emit("error", case, json!({"class": "TimeoutError", "code": null, "message": elapsed.to_string()}));
            return End::Failed(None);
        }
    };
    *READER_END.lock().unwrap() = None; // a previous connection's reader may have said more
    held.conn = Some(conn);
    let conn = held.conn.as_ref().unwrap();
    macro_rules! attempt {
        ($call:expr) => {
            match $call.await {
                Ok(v) => v,
                Err(e) => return End::Failed(Some(e)),
            }
        };
    }
    attempt!(conn.register_callback(ConnectionNotices(tx.clone())));
    let server = conn.server_properties();
    let mut shown = Map::new();
    for (key, value) in [("product", server.product()), ("version", server.version()),
                         ("cluster_name", server.cluster_name())] {
        if value != "unknown" {
            shown.insert(key.into(), json!(value));
        }
    }
    emit("connected", case, json!({"server_properties": shown}));
    held.channel = Some(attempt!(conn.open_channel(None)));
    let ch = held.channel.as_ref().unwrap();
    let id = ch.channel_id();
    attempt!(ch.register_callback(ChannelNotices(tx)));
    emit("channel", case, json!({"channel": id}));
    attempt!(ch.confirm_select(ConfirmSelectArguments::new(false)));
    let declared = attempt!(ch.queue_declare(QueueDeclareArguments::new(QUEUE)));
    let (queue, messages, consumers) = declared.expect("declare-ok (not no-wait)");
    emit("declared", case, json!({"queue": queue, "message_count": messages, "consumer_count": consumers}));
    // the shim names the consumer, as the Go shim does; amqprs gives consume-ok's name
    let tag = format!("amqpfuzz-shim-{}-{case}", std::process::id());
    let (tag, rx) = attempt!(ch.basic_consume_rx(BasicConsumeArguments::new(QUEUE, &tag)));
    let deliveries = Some(rx);
    emit("consuming", case, json!({"tag": tag}));
    let mut headers = FieldTable::new();
    headers.insert("shim".try_into().unwrap(), FieldValue::S(NAME.try_into().unwrap()));
    let props = BasicProperties::default()
        .with_content_type("text/plain")
        .with_delivery_mode(1)
        .with_headers(headers)
        .finish();
    let body = format!("amqpfuzz-shim-{case}").into_bytes();
    let mut publish = BasicPublishArguments::new("", QUEUE);
    publish.mandatory(true);
    attempt!(ch.basic_publish(props, body, publish));
    // the confirm comes to the channel's callback; returns and deliveries before it are told
    let mut state = Case {
        case,
        id,
        conn,
        ch,
        notices,
        deliveries,
        confirmed: None,
        looks: tokio::time::interval(Duration::from_millis(50)),
    };
    while state.confirmed.is_none() {
        if let Step::Failed(e) = state.step(None).await {
            return End::Failed(e);
        }
    }
    emit("confirm", case, json!({"ack": state.confirmed.unwrap()}));
    match attempt!(ch.basic_get(BasicGetArguments::new(QUEUE))) {
        Some((got, props, body)) => {
            message(case, "get", id, json!(got.delivery_tag()), json!(got.redelivered()),
                    got.exchange(), got.routing_key(), &body, &props);
            attempt!(ch.basic_ack(BasicAckArguments::new(got.delivery_tag(), false)));
        }
        None => emit("get-empty", case, json!({})),
    }
    // every delivery and the consumer's cancel until the connection ends or --linger passes
    let deadline = tokio::time::Instant::now() + linger;
    loop {
        match state.step(Some(deadline)).await {
            Step::Going => {}
            Step::Lingered => return End::Lingered,
            Step::Failed(e) => return End::Failed(e),
        }
    }
}

/// Waits until amqprs's tasks for the connection are done: its reader gone, the channel's
/// dispatcher through the frames it was handed (a panic there then falls in this case, not
/// the next). Only once the connection is closed: the reader then ends at once.
async fn settled(held: &Held) {
    let closed = |held: &Held| {
        held.conn.as_ref().is_none_or(|c| !c.is_open())
            && held.channel.as_ref().is_none_or(|c| !c.is_open())
    };
    while !closed(held) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn run_case(args: &OpenConnectionArguments, case: u64, linger: Duration) {
    emit("connecting", case, json!({}));
    let mut held = Held { conn: None, channel: None };
    let (tx, mut notices) = unbounded_channel();
    let end = session(args, case, linger, &mut held, &mut notices, tx).await;
    let opened = held.conn.is_some();
    match end {
        End::Lingered => {
            let conn = held.conn.clone().unwrap();
            let closing = conn.close().await;
            settled(&held).await;
            match closing {
                Ok(()) => emit("closed", case, json!({"by": "client", "code": null, "text": null})),
                Err(e) => ended(case, Some(e), &mut notices, opened),
            }
        }
        End::Failed(None) if !opened => {} // the connect timeout: said already
        End::Failed(err) => {
            let open = held.conn.as_ref().is_some_and(|c| c.is_open());
            if !open {
                settled(&held).await;
            }
            ended(case, err, &mut notices, opened);
            // a connection still open after an error: closed before the next case
            if let Some(conn) = held.conn.clone().filter(|_| open) {
                let _ = conn.close().await;
                settled(&held).await;
            }
        }
    }
}

fn main() {
    let args = common::start(NAME);
    tracing::subscriber::set_global_default(ReaderSpy).expect("one subscriber");
    let open = url_arguments(&args.url).unwrap_or_else(|| common::usage(NAME));
    common::cases(args.once, |case| run_case(&open, case, args.linger));
}
